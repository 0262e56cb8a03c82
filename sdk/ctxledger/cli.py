"""The ``ctxledger`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ctxledger.__about__ import __version__


def _demo(args: argparse.Namespace) -> int:
    import ctxledger
    from ctxledger import demo

    client = ctxledger.configure(
        service_name="ctxledger-demo",
        endpoint=args.endpoint,
        export=args.endpoint is not None,
        ledger=args.ledger,
    )
    demo.run_seed_004()
    ctxledger.flush()
    print(demo.summary(client.ledger), file=sys.stderr)
    stats = client.stats()
    if args.endpoint:
        print(
            f"exported {stats.spans_exported} spans to {args.endpoint} ({stats.dropped} dropped)",
            file=sys.stderr,
        )
    return 0


_SERVER_HINT = "this command needs the collector's dependencies: pip install 'ctxledger[server]'"


def _server_modules() -> None:
    try:
        import fastapi  # noqa: F401
        import sqlmodel  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        raise SystemExit(f"ctxledger: {_SERVER_HINT} ({error.name} is missing)") from error


def _serve(args: argparse.Namespace) -> int:
    _server_modules()
    import os

    if args.database_url:
        os.environ["CTXLEDGER_DATABASE_URL"] = args.database_url
    from ctxledger_collector.serve import serve

    return serve(host=args.host, port=args.port, log_level=args.log_level)


def _db_upgrade(args: argparse.Namespace) -> int:
    _server_modules()
    from ctxledger_collector.migrate import current_revision, upgrade
    from ctxledger_collector.settings import Settings

    url = args.database_url or Settings().database_url
    upgrade(url, args.revision)
    print(f"database {url!r} is at revision {current_revision(url)}")
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
        help="run a scripted agent that reproduces seed 004's silent 50 -> 20 loss",
        description="Run a scripted agent (no LLM, no network) and print the data ledger.",
    )
    demo.add_argument(
        "--endpoint",
        help="also export the spans over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318)",
    )
    demo.add_argument(
        "--ledger", default="stderr", help="where the ledger goes: stderr, stdout or a file path"
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
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(handler=_serve)

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply the migrations")
    upgrade.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    upgrade.add_argument("--revision", default="head")
    upgrade.set_defaults(handler=_db_upgrade)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
