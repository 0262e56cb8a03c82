"""The ``ctxledger`` command line's arguments: every subcommand, its flags and its handler."""

from __future__ import annotations

import argparse

from ctxledger import __version__
from ctxledger_cli.commands import (
    handle_alerts_check,
    handle_dashboard,
    handle_db_prune,
    handle_db_upgrade,
    handle_demo,
    handle_key_new,
    handle_provider,
    handle_serve,
    handle_up,
)


def header_pair(text: str) -> tuple[str, str]:
    """``--forward-header`` as (name, value): split at the first ``=``, taken literally."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


INSECURE_HELP = (
    "allow an address other machines can reach without ingest and read keys (see docs/security.md)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxledger",
        description="Make every loss of tool-result data on its way to the model visible.",
    )
    parser.add_argument("--version", action="version", version=f"ctxledger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run agents that reproduce the seeds' incidents (no LLM, no network, no keys)",
        description="Run the seeds' incidents — real agent loops on the openai and anthropic "
        "clients and on LangGraph, the OpenAI Agents SDK and MCP against the built-in "
        "provider stand-in — and print the data ledger; with --endpoint, send every "
        "incident to a collector and print its verdicts. Needs the server extra (the "
        "clients); the agents extra brings the frameworks (an incident whose framework is "
        "missing is skipped).",
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
    demo.set_defaults(handler=handle_demo)

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
        "--workers",
        type=int,
        default=1,
        help="worker processes on the one port (PostgreSQL only; default 1)",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=int,
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may still finish before they are "
        "cancelled; overrides CTXLEDGER_SHUTDOWN_TIMEOUT_S (default 10)",
    )
    serve.add_argument(
        "--spool-dir",
        metavar="DIR",
        help="where exports accepted during a database outage wait on disk ('off': answer "
        "503 instead); overrides CTXLEDGER_INGEST_SPOOL_DIR",
    )
    serve.add_argument(
        "--forward-to",
        action="append",
        metavar="URL",
        help="also forward every accepted export, unchanged, to this OTLP/HTTP traces "
        "endpoint (the full URL, e.g. http://phoenix:6006/v1/traces); repeatable; "
        "overrides CTXLEDGER_FORWARD_TO",
    )
    serve.add_argument(
        "--forward-header",
        action="append",
        type=header_pair,
        metavar="NAME=VALUE",
        help="a header sent with every forwarded request, e.g. 'Authorization=Bearer KEY'; "
        "repeatable; overrides CTXLEDGER_FORWARD_HEADERS",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="once up, send the seeds' incidents to this collector and print its verdicts",
    )
    serve.add_argument("--insecure", action="store_true", help=INSECURE_HELP)
    serve.set_defaults(handler=handle_serve)

    dashboard = commands.add_parser(
        "dashboard", help="run the dashboard against a collector's HTTP API"
    )
    dashboard.add_argument("--api", default="http://127.0.0.1:4318", help="the collector's URL")
    dashboard.add_argument("--host", default="127.0.0.1")
    dashboard.add_argument("--port", type=int, default=8501)
    dashboard.add_argument(
        "--insecure",
        action="store_true",
        help="allow an address other machines can reach: the dashboard has no login of "
        "its own, so anyone reaching it sees the data (see docs/security.md)",
    )
    dashboard.set_defaults(handler=handle_dashboard)

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
    stack.add_argument("--insecure", action="store_true", help=INSECURE_HELP)
    stack.set_defaults(handler=handle_up)

    key = commands.add_parser("key", help="access keys")
    key_commands = key.add_subparsers(dest="key_command", required=True)
    new = key_commands.add_parser(
        "new",
        help="print a new random key and its sha256: digest",
        description="Print a new random key (give it to the client: CTXLEDGER_API_KEY or "
        "CTXLEDGER_READ_KEY) and its sha256:<hex> digest (configure that in "
        "CTXLEDGER_API_KEYS or CTXLEDGER_READ_KEYS, so the server never holds the key).",
    )
    new.set_defaults(handler=handle_key_new)

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply the migrations")
    upgrade.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    upgrade.add_argument("--revision", default="head")
    upgrade.set_defaults(handler=handle_db_upgrade)
    prune = db_commands.add_parser(
        "prune",
        help="remove runs older than an age, with their measurements, reports and counters",
        description="Remove every run whose newest span is older than --older-than, in "
        "small batches (ingest keeps running between them); on PostgreSQL the partitions "
        "left empty are dropped. Alert history stays.",
    )
    prune.add_argument(
        "--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 90m (days if no unit)"
    )
    prune.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    prune.add_argument(
        "--batch-runs", type=int, default=200, help="runs removed per transaction (default 200)"
    )
    prune.set_defaults(handler=handle_db_prune)

    provider = commands.add_parser(
        "provider",
        help="run the LLM provider stand-in (OpenAI chat + Responses, Anthropic Messages)",
        description="Serve a local stand-in for OpenAI and Anthropic: it counts tokens, "
        "refuses over-long prompts and broken tool pairing with the providers' own errors, "
        "and answers from a script. Point the openai client at http://HOST:PORT/v1 and the "
        "anthropic client at http://HOST:PORT.",
    )
    provider.add_argument("--host", default="127.0.0.1")
    provider.add_argument("--port", type=int, default=8765)
    provider.add_argument(
        "--context-window",
        type=int,
        help="prompt tokens allowed for every model (default: each model's own window)",
    )
    provider.add_argument(
        "--silent-front-discard",
        action="store_true",
        help="drop the oldest messages of an over-long prompt and answer 200 (ollama#3839)",
    )
    provider.add_argument("--script", help="a JSON or YAML file of scripted answers")
    provider.add_argument("--verbose", action="store_true", help="log every request")
    provider.set_defaults(handler=handle_provider)

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
    check.set_defaults(handler=handle_alerts_check)
    return parser
