"""What each ``ctxledger`` subcommand does, given its parsed arguments.

``demo`` needs the SDK only. The server commands check for the ``[server]`` extra first
and import the collector, the dashboard and their dependencies only when they run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxledger_cli.demo.runner import run_demo
from ctxledger_cli.server_extra import require_server_extra

if TYPE_CHECKING:
    from ctxledger_collector.storage.database_url import GivenDatabaseUrl

UNSET_VARIABLE = re.compile(r"environment variable (\w+) is not set")
NEW_SECRET = (
    "export {name}=$(python -c "
    "'from ctxledger.webhooks import generate_secret; print(generate_secret())')"
)
DASHBOARD_EXPOSED = (
    "ctxledger dashboard: refusing to listen on {host!r}, which other machines can reach: "
    "the dashboard has no login of its own, so anyone reaching it would see every journey. "
    "Bind to 127.0.0.1 and put an authenticating reverse proxy in front, or pass --insecure "
    "(docs/security.md)"
)


def handle_demo(args: argparse.Namespace) -> int:
    from ctxledger._ledger import ledger_file_problem

    if (problem := ledger_file_problem(args.ledger)) is not None:
        print(
            f"ctxledger demo: cannot write the ledger to {args.ledger}: {problem}", file=sys.stderr
        )
        return 2
    return run_demo(args.endpoint, args.ledger, everything=args.endpoint is not None or args.all)


def handle_provider(args: argparse.Namespace) -> int:
    from ctxledger_cli.provider import ProviderStandIn, load_script
    from ctxledger_collector.ops.listen_ports import port_problem

    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError, ImportError) as error:
        print(f"ctxledger provider: cannot read the script: {error}", file=sys.stderr)
        return 2
    try:
        stand_in = ProviderStandIn(
            args.host,
            args.port,
            script=script,
            context_window=args.context_window,
            silent_front_discard=args.silent_front_discard,
            token_truncate=args.token_truncate,
            n_keep=args.n_keep,
            refuse_over_window=args.refuse_over_window,
            stop_at_limit=args.stop_at_limit,
            count_scale=args.count_scale,
            count_encoding=args.count_encoding,
            loop=args.loop,
            verbose=args.verbose,
        )
    except ValueError as error:
        print(f"ctxledger provider: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the port is taken, or cannot be listened on
        problem = port_problem(
            "provider", args.host, args.port, "--port", error, "another provider stand-in"
        )
        print(problem, file=sys.stderr)
        return 2
    print(
        f"Provider stand-in on {stand_in.url} (openai base_url {stand_in.openai_base_url}, "
        f"anthropic base_url {stand_in.anthropic_base_url}); Ctrl-C stops it.",
        file=sys.stderr,
    )
    if not script:
        print('No --script: every request is answered with the text "ok".', file=sys.stderr)
    elif args.loop:
        print(f"The script's {len(script)} answers repeat (--loop).", file=sys.stderr)
    else:
        print(
            f"The script has {len(script)} answers; after them every request is refused "
            f"until POST {stand_in.reset_url} rewinds it (or use --loop).",
            file=sys.stderr,
        )
    with contextlib.suppress(KeyboardInterrupt):
        stand_in.serve_forever()
    return 0


def send_demo_incidents(collector_url: str) -> None:
    """``serve --demo``'s on-ready callback: the incidents, sent to the collector itself."""
    run_demo(collector_url, ledger="off", everything=True)
    print("\nThe collector keeps running; press Ctrl-C to stop it.", file=sys.stderr)


def handle_serve(args: argparse.Namespace) -> int:
    require_server_extra()
    listen_socket = None
    if args.fd is not None:  # the port `up` bound and checked, handed over
        if args.workers > 1:
            print("ctxledger serve: --fd serves one worker; drop --workers", file=sys.stderr)
            return 2
        try:
            listen_socket = socket.socket(fileno=args.fd)
        except OSError as error:
            print(f"ctxledger serve: --fd {args.fd} is not a socket: {error}", file=sys.stderr)
            return 2
    if args.database_url:
        os.environ["CTXLEDGER_DATABASE_URL"] = args.database_url
    # Through the environment, so that every worker process reads the same settings.
    if args.shutdown_timeout is not None:
        os.environ["CTXLEDGER_SHUTDOWN_TIMEOUT_S"] = str(args.shutdown_timeout)
    if args.spool_dir:
        os.environ["CTXLEDGER_INGEST_SPOOL_DIR"] = args.spool_dir
    if args.read_bodies_from:
        os.environ["CTXLEDGER_READ_BODIES_FROM"] = json.dumps(args.read_bodies_from)
    if args.forward_to:
        os.environ["CTXLEDGER_FORWARD_TO"] = json.dumps(args.forward_to)
    if args.forward_header:
        os.environ["CTXLEDGER_FORWARD_HEADERS"] = json.dumps(dict(args.forward_header))
    from ctxledger_collector.serve import serve

    return serve(
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        on_ready=send_demo_incidents if args.demo else None,
        workers=args.workers,
        insecure=args.insecure,
        listen_socket=listen_socket,
        database_url_flag=bool(args.database_url),
    )


def handle_dashboard(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_cli.children import run_in_foreground
    from ctxledger_collector.ops.exposure import is_loopback_host
    from ctxledger_collector.ops.listen_ports import reserve_ports
    from ctxledger_dashboard.launch import dashboard_command, dashboard_environment

    if not args.insecure and not is_loopback_host(args.host):
        print(DASHBOARD_EXPOSED.format(host=args.host), file=sys.stderr)
        return 2
    reserved = reserve_ports("dashboard", args.host, [(args.port, "--port")])
    if isinstance(reserved, str):
        print(reserved, file=sys.stderr)
        return 2
    for sock in reserved:
        sock.close()  # Streamlit binds the port itself
    print(
        f"ctxledger dashboard on http://{args.host}:{args.port} reading {args.api}", file=sys.stderr
    )
    return run_in_foreground(
        dashboard_command(args.host, args.port), dashboard_environment(args.api)
    )


def handle_up(args: argparse.Namespace) -> int:
    require_server_extra()
    from pydantic import ValidationError

    from ctxledger_cli.stack import up
    from ctxledger_collector.ops.database_start import database_problem
    from ctxledger_collector.ops.settings import Settings
    from ctxledger_collector.storage.database_url import given_database_url

    try:  # the collector's database, looked at (nothing created) before anything starts
        problem = database_problem(Settings(), given_database_url(), migrate=False)
    except ValidationError:
        problem = None  # the collector says which setting is wrong, when it starts
    if problem:
        print(f"ctxledger up: {problem}", file=sys.stderr)
        return 2
    return up(
        args.host, args.port, args.dashboard_port, demo=not args.no_demo, insecure=args.insecure
    )


def handle_key_new(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.ops.keys import key_digest, new_key

    key = new_key()
    print(f"key:    {key}")
    print(f"digest: {key_digest(key)}")
    return 0


def handle_db_upgrade(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.ops.settings import Settings
    from ctxledger_collector.storage.database_url import given_database_url, redact_database_url
    from ctxledger_collector.storage.migrate import current_revision, upgrade

    settings = Settings()
    given = given_database_url(args.database_url)

    def migrate(url: str) -> int:
        upgrade(url, args.revision, partition_runs=settings.partition_runs)
        revision = current_revision(url)
        print(f"database {redact_database_url(given.url)!r} is at revision {revision}")
        return 0

    return on_database("db upgrade", given, migrate)


def handle_db_prune(args: argparse.Namespace) -> int:
    require_server_extra()
    import time

    from ctxledger_collector.storage.database import make_engine
    from ctxledger_collector.storage.database_url import given_database_url
    from ctxledger_collector.storage.migrate import is_up_to_date
    from ctxledger_collector.storage.retention import parse_age, prune

    try:
        age_s = parse_age(args.older_than)
    except ValueError as error:
        print(f"ctxledger db prune: {error}", file=sys.stderr)
        return 2
    given = given_database_url(args.database_url)

    def remove_old_runs(url: str) -> int:
        if not is_up_to_date(url):
            print(f"ctxledger db prune: {given.not_migrated()}", file=sys.stderr)
            return 2
        engine = make_engine(url)
        try:
            outcome = prune(engine, time.time() - age_s, batch_runs=args.batch_runs)
        finally:
            engine.dispose()
        emptied = f", dropped {len(outcome.partitions_detached)} expired partitions whole" * bool(
            outcome.partitions_detached
        )
        dropped = f", dropped {len(outcome.partitions_dropped)} empty partitions" * bool(
            outcome.partitions_dropped
        )
        logs = f" and {outcome.log_records} log records" * bool(outcome.log_records)
        print(
            f"removed {outcome.runs} runs and {outcome.reports} reports{logs} older than "
            f"{args.older_than} in {outcome.batches} batches{emptied}{dropped}"
        )
        return 0

    return on_database("db prune", given, remove_old_runs)


def on_database(command: str, given: GivenDatabaseUrl, work: Callable[[str], int]) -> int:
    """``work`` on the usable URL of the database the user ``given``; its exit code, or 2
    with one line on stderr when the URL or the database cannot be used."""
    from ctxledger_collector.storage.database_url import DATABASE_ERRORS, DatabaseUrlError

    try:
        return work(given.usable())
    except DatabaseUrlError as error:
        problem = str(error)
    except DATABASE_ERRORS as error:
        problem = given.explain(error)
    print(f"ctxledger {command}: {problem}", file=sys.stderr)
    return 2


def handle_alerts_check(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.alerts.config import AlertsConfigError, load_alerts_config

    try:
        config = load_alerts_config(args.file)
    except AlertsConfigError as error:
        for problem in error.problems:
            print(problem)
        for name in sorted(set(UNSET_VARIABLE.findall("\n".join(error.problems)))):
            if "SECRET" in name:
                print(f"{name} is a signing secret; make one with: {NEW_SECRET.format(name=name)}")
        return 1
    print(f"{args.file}: OK — {len(config.rules)} rules, {len(config.sinks)} sinks")
    return 0
