"""What each ``ctxledger`` subcommand does, given its parsed arguments.

``demo`` needs the SDK only. The server commands check for the ``[server]`` extra first
and import the collector, the dashboard and their dependencies only when they run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from ctxledger_cli.demo.runner import run_demo
from ctxledger_cli.server_extra import require_server_extra

DASHBOARD_EXPOSED = (
    "ctxledger dashboard: refusing to listen on {host!r}, which other machines can reach: "
    "the dashboard has no login of its own, so anyone reaching it would see every journey. "
    "Bind to 127.0.0.1 and put an authenticating reverse proxy in front, or pass --insecure "
    "(docs/security.md)"
)


def handle_demo(args: argparse.Namespace) -> int:
    return run_demo(args.endpoint, args.ledger, everything=args.endpoint is not None or args.all)


def handle_provider(args: argparse.Namespace) -> int:
    from ctxledger_cli.provider import ProviderStandIn, load_script

    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError, ImportError) as error:
        print(f"ctxledger provider: cannot read the script: {error}", file=sys.stderr)
        return 2
    stand_in = ProviderStandIn(
        args.host,
        args.port,
        script=script,
        context_window=args.context_window,
        silent_front_discard=args.silent_front_discard,
        verbose=args.verbose,
    )
    print(
        f"Provider stand-in on {stand_in.url} (openai base_url {stand_in.openai_base_url}, "
        f"anthropic base_url {stand_in.anthropic_base_url}); Ctrl-C stops it.",
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
    if args.database_url:
        os.environ["CTXLEDGER_DATABASE_URL"] = args.database_url
    # Through the environment, so that every worker process reads the same settings.
    if args.shutdown_timeout is not None:
        os.environ["CTXLEDGER_SHUTDOWN_TIMEOUT_S"] = str(args.shutdown_timeout)
    if args.spool_dir:
        os.environ["CTXLEDGER_INGEST_SPOOL_DIR"] = args.spool_dir
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
    )


def handle_dashboard(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.exposure import is_loopback_host
    from ctxledger_dashboard.launch import run_dashboard

    if not args.insecure and not is_loopback_host(args.host):
        print(DASHBOARD_EXPOSED.format(host=args.host), file=sys.stderr)
        return 2
    return run_dashboard(args.api, args.host, args.port)


def handle_up(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_cli.stack import up

    return up(
        args.host, args.port, args.dashboard_port, demo=not args.no_demo, insecure=args.insecure
    )


def handle_key_new(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.keys import key_digest, new_key

    key = new_key()
    print(f"key:    {key}")
    print(f"digest: {key_digest(key)}")
    return 0


def handle_db_upgrade(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.migrate import current_revision, upgrade
    from ctxledger_collector.settings import Settings

    settings = Settings()
    url = args.database_url or settings.database_url
    upgrade(url, args.revision, partition_runs=settings.partition_runs)
    print(f"database {url!r} is at revision {current_revision(url)}")
    return 0


def handle_db_prune(args: argparse.Namespace) -> int:
    require_server_extra()
    import time

    from ctxledger_collector.database import make_engine
    from ctxledger_collector.retention import parse_age, prune
    from ctxledger_collector.settings import Settings

    try:
        age_s = parse_age(args.older_than)
    except ValueError as error:
        print(f"ctxledger db prune: {error}", file=sys.stderr)
        return 2
    url = args.database_url or Settings().database_url
    engine = make_engine(url)
    try:
        outcome = prune(engine, time.time() - age_s, batch_runs=args.batch_runs)
    finally:
        engine.dispose()
    emptied = f", emptied {len(outcome.partitions_emptied)} partitions whole" * bool(
        outcome.partitions_emptied
    )
    dropped = f", dropped {len(outcome.partitions_dropped)} empty partitions" * bool(
        outcome.partitions_dropped
    )
    print(
        f"removed {outcome.runs} runs and {outcome.reports} reports older than "
        f"{args.older_than} in {outcome.batches} batches{emptied}{dropped}"
    )
    return 0


def handle_alerts_check(args: argparse.Namespace) -> int:
    require_server_extra()
    from ctxledger_collector.alerts.config import AlertsConfigError, load_alerts_config

    try:
        config = load_alerts_config(args.file)
    except AlertsConfigError as error:
        for problem in error.problems:
            print(problem)
        return 1
    print(f"{args.file}: OK — {len(config.rules)} rules, {len(config.sinks)} sinks")
    return 0
