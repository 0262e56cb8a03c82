"""The ``ctxledger`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ctxledger.__about__ import __version__


def run_demo(endpoint: str | None, ledger: str, everything: bool) -> int:
    """Run the scripted incidents; with an endpoint, print the collector's verdicts."""
    import ctxledger
    from ctxledger import demo

    client = ctxledger.configure(
        service_name="ctxledger-demo",
        endpoint=endpoint,
        export=endpoint is not None,
        ledger=ledger,
    )
    if everything:
        demo.run_all_incidents()
    else:
        demo.run_seed_004()
    ctxledger.flush()
    stats = client.stats()
    if client.ledger is not None:
        print(demo.summary(client.ledger), file=sys.stderr)
    if endpoint is None:
        return 0
    import urllib.error

    from ctxledger.demo_verdicts import print_verdicts

    print(
        f"exported {stats.spans_exported} spans to {endpoint} ({stats.dropped} dropped)",
        file=sys.stderr,
    )
    try:
        agreed = print_verdicts(endpoint, sys.stdout)
    except urllib.error.HTTPError as error:
        if error.code not in (404, 405, 501):  # anything but "no such API" is a failure
            raise
        print(
            f"{endpoint} accepted the spans but has no ctxledger query API "
            "(an OpenTelemetry collector?); its verdicts cannot be shown here",
            file=sys.stderr,
        )
        return 0
    except OSError as error:
        print(f"ctxledger demo: cannot read verdicts from {endpoint}: {error}", file=sys.stderr)
        return 1
    return 0 if agreed else 1


def _demo(args: argparse.Namespace) -> int:
    return run_demo(args.endpoint, args.ledger, everything=args.endpoint is not None or args.all)


_SERVER_HINT = "this command needs the collector's dependencies: pip install 'ctxledger[server]'"


def _server_modules() -> None:
    try:
        import fastapi  # noqa: F401
        import sqlmodel  # noqa: F401
        import streamlit  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        raise SystemExit(f"ctxledger: {_SERVER_HINT} ({error.name} is missing)") from error


def _send_demo_incidents(collector_url: str) -> None:
    """``serve --demo``'s on-ready callback: the incidents, sent to the collector itself."""
    run_demo(collector_url, ledger="off", everything=True)
    print("\nThe collector keeps running; press Ctrl-C to stop it.", file=sys.stderr)


def _serve(args: argparse.Namespace) -> int:
    _server_modules()
    import os

    if args.database_url:
        os.environ["CTXLEDGER_DATABASE_URL"] = args.database_url
    from ctxledger_collector.serve import serve

    return serve(
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        on_ready=_send_demo_incidents if args.demo else None,
    )


def _dashboard(args: argparse.Namespace) -> int:
    _server_modules()
    from ctxledger_dashboard.launch import run_dashboard

    return run_dashboard(args.api, args.host, args.port)


def _up(args: argparse.Namespace) -> int:
    _server_modules()
    from ctxledger_collector.stack import up

    return up(args.host, args.port, args.dashboard_port, demo=not args.no_demo)


def _db_upgrade(args: argparse.Namespace) -> int:
    _server_modules()
    from ctxledger_collector.migrate import current_revision, upgrade
    from ctxledger_collector.settings import Settings

    url = args.database_url or Settings().database_url
    upgrade(url, args.revision)
    print(f"database {url!r} is at revision {current_revision(url)}")
    return 0


def _alerts_check(args: argparse.Namespace) -> int:
    _server_modules()
    from ctxledger_collector.alerts.config import AlertsConfigError, load_alerts_config

    try:
        config = load_alerts_config(args.file)
    except AlertsConfigError as error:
        for problem in error.problems:
            print(problem)
        return 1
    print(f"{args.file}: OK — {len(config.rules)} rules, {len(config.sinks)} sinks")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxledger",
        description="Make every loss of tool-result data on its way to the model visible.",
    )
    parser.add_argument("--version", action="version", version=f"ctxledger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run scripted agents that reproduce the seeds' incidents (no LLM needed)",
        description="Run scripted agents (no LLM, no network) and print the data ledger; "
        "with --endpoint, send every incident to a collector and print its verdicts.",
    )
    demo.add_argument(
        "--endpoint",
        help="also export the spans over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318)",
    )
    demo.add_argument(
        "--ledger", default="stderr", help="where the ledger goes: stderr, stdout, a file or off"
    )
    demo.add_argument(
        "--all",
        action="store_true",
        help="run every seed incident (the default with --endpoint; otherwise seed 004 only)",
    )
    demo.set_defaults(handler=_demo)

    serve = commands.add_parser(
        "serve",
        help="run the collector (OTLP/HTTP ingest, verdicts, query API, metrics)",
        description="Run the collector. Settings come from CTXLEDGER_* variables; "
        "the database defaults to sqlite:///./ctxledger.db (migrated on start).",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=4318)
    serve.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    serve.add_argument("--log-level", default="warning")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="once up, send the seeds' incidents to this collector and print its verdicts",
    )
    serve.set_defaults(handler=_serve)

    dashboard = commands.add_parser(
        "dashboard", help="run the dashboard against a collector's HTTP API"
    )
    dashboard.add_argument("--api", default="http://127.0.0.1:4318", help="the collector's URL")
    dashboard.add_argument("--host", default="127.0.0.1")
    dashboard.add_argument("--port", type=int, default=8501)
    dashboard.set_defaults(handler=_dashboard)

    stack = commands.add_parser(
        "up",
        help="run the whole stack: collector (SQLite), dashboard and the demo incidents",
        description="Start the collector on embedded SQLite and the dashboard, send the "
        "seeds' incidents (unless --no-demo), print both URLs; Ctrl-C stops both.",
    )
    stack.add_argument("--host", default="127.0.0.1")
    stack.add_argument("--port", type=int, default=4318, help="the collector's port")
    stack.add_argument("--dashboard-port", type=int, default=8501)
    stack.add_argument("--no-demo", action="store_true", help="do not send the demo incidents")
    stack.set_defaults(handler=_up)

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply the migrations")
    upgrade.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    upgrade.add_argument("--revision", default="head")
    upgrade.set_defaults(handler=_db_upgrade)

    alerts = commands.add_parser("alerts", help="alert rules")
    alerts_commands = alerts.add_subparsers(dest="alerts_command", required=True)
    check = alerts_commands.add_parser(
        "check",
        help="check an alert rules file and print every problem with its line",
        description="Check an alert rules file (YAML, or TOML if it ends in .toml): print "
        "'FILE: OK' and exit 0, or every problem, one per line, and exit 1. Secrets written "
        "${NAME} are read from the environment, so set them before checking.",
    )
    check.add_argument("file", metavar="FILE", help="the rules file")
    check.set_defaults(handler=_alerts_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
