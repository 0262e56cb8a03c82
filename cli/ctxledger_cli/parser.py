"""The ``ctxledger`` command line's arguments: every subcommand, its flags and its handler."""

from __future__ import annotations

import argparse
from typing import Any

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
from ctxledger_cli.reports_command import add_reports_command
from ctxledger_cli.spool_command import add_spool_command


def header_pair(text: str) -> tuple[str, str]:
    """``--forward-header`` as (name, value): split at the first ``=``, taken literally."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


INSECURE_HELP = (
    "allow an address other machines can reach without ingest and read keys (see docs/security.md)"
)
HOST_HELP = "the address to listen on (one other machines can reach needs keys or --insecure)"


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, unless it has none (no value, a switch)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose subcommands' parsers show defaults too (argparse gives a
    subcommand's parser its parent's class, not its formatter)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpWithDefaults)
        super().__init__(*args, **kwargs)


def add_command_group(
    commands: argparse._SubParsersAction[CommandParser],
    name: str,
    *,
    help: str,
    description: str,
) -> argparse._SubParsersAction[CommandParser]:
    """A subcommand that only groups others (``ctxledger db upgrade``): its own subcommands,
    one of which must be given; the chosen one is in ``<name>_command``."""
    group = commands.add_parser(name, help=help, description=description)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="ctxledger",
        description="Make every loss of tool-result data on its way to the model visible.",
    )
    parser.add_argument("--version", action="version", version=f"ctxledger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    serve.add_argument("--host", default="127.0.0.1", help=HOST_HELP)
    serve.add_argument("--port", type=int, default=4318, help="the port OTLP and the API listen on")
    serve.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    serve.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help="uvicorn's log level",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes on the one port (PostgreSQL only)",
    )
    serve.add_argument(
        "--fd",
        type=int,
        metavar="FD",
        help="serve on this already bound socket, inherited as file descriptor FD, instead "
        "of binding --host and --port (how `ctxledger up` hands over the port it checked); "
        "one worker only",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=int,
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may still finish (an export still "
        "unfinished 0.5 s before is answered 503, so that its client retries); overrides "
        "CTXLEDGER_SHUTDOWN_TIMEOUT_S (default 10)",
    )
    serve.add_argument(
        "--spool-dir",
        metavar="DIR",
        help="where exports accepted during a database outage wait on disk ('off': answer "
        "503 instead); overrides CTXLEDGER_INGEST_SPOOL_DIR",
    )
    serve.add_argument(
        "--read-bodies-from",
        action="append",
        metavar="DIR",
        help="read request bodies a runtime wrote to files in DIR (Claude Code's "
        "OTEL_LOG_RAW_API_BODIES=file:DIR), never a file outside it; repeatable; overrides "
        "CTXLEDGER_READ_BODIES_FROM",
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
        "dashboard",
        help="run the dashboard against a collector's HTTP API",
        description="Run the Streamlit dashboard, reading a running collector's HTTP API "
        "(with CTXLEDGER_READ_KEY if it has read keys). Ctrl-C or SIGTERM stops it.",
    )
    dashboard.add_argument(
        "--api", default="http://127.0.0.1:4318", help="the collector's base URL to read"
    )
    dashboard.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    dashboard.add_argument("--port", type=int, default=8501, help="the port to listen on")
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
        "seeds' incidents (unless --no-demo), print both URLs; Ctrl-C or SIGTERM stops "
        "both. Both ports are checked first: a taken one is refused before anything starts.",
    )
    stack.add_argument("--host", default="127.0.0.1", help="the address both listen on")
    stack.add_argument("--port", type=int, default=4318, help="the collector's port")
    stack.add_argument("--dashboard-port", type=int, default=8501, help="the dashboard's port")
    stack.add_argument("--no-demo", action="store_true", help="do not send the demo incidents")
    stack.add_argument("--insecure", action="store_true", help=INSECURE_HELP)
    stack.set_defaults(handler=handle_up)

    key_commands = add_command_group(
        commands,
        "key",
        help="access keys",
        description="Make the ingest and read keys the collector checks (docs/security.md).",
    )
    new = key_commands.add_parser(
        "new",
        help="print a new random key and its sha256: digest",
        description="Print a new random key (give it to the client: CTXLEDGER_API_KEY or "
        "CTXLEDGER_READ_KEY) and its sha256:<hex> digest (configure that in "
        "CTXLEDGER_API_KEYS or CTXLEDGER_READ_KEYS, so the server never holds the key).",
    )
    new.set_defaults(handler=handle_key_new)

    db_commands = add_command_group(
        commands,
        "db",
        help="database maintenance",
        description="Migrate the collector's database, or remove old runs from it.",
    )
    upgrade = db_commands.add_parser(
        "upgrade",
        help="apply the migrations",
        description="Apply the Alembic migrations up to --revision and print the revision "
        "the database is at (`serve` migrates SQLite on start; PostgreSQL needs this).",
    )
    upgrade.add_argument("--database-url", help="overrides CTXLEDGER_DATABASE_URL")
    upgrade.add_argument("--revision", default="head", help="the migration to stop at")
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
    prune.add_argument("--batch-runs", type=int, default=200, help="runs removed per transaction")
    prune.set_defaults(handler=handle_db_prune)

    provider = commands.add_parser(
        "provider",
        help="run the LLM provider stand-in (OpenAI chat + Responses, Anthropic Messages)",
        description="Serve a local stand-in for OpenAI and Anthropic: it counts tokens, "
        "refuses over-long prompts and broken tool pairing with the providers' own errors, "
        "and answers from a script. Point the openai client at http://HOST:PORT/v1 and the "
        "anthropic client at http://HOST:PORT. It also serves ollama's POST /api/chat "
        "(front discard over num_ctx, or refusal with truncate=false) and llama.cpp's "
        "POST /completion (token truncation with n_keep, or refusal), and honours Responses "
        "truncation=auto, Anthropic's context editing and LM Studio's stopAtLimit "
        "(docs/provider-stand-in.md).",
    )
    provider.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    provider.add_argument("--port", type=int, default=8765, help="the port to listen on")
    provider.add_argument(
        "--context-window",
        type=int,
        help="prompt tokens allowed for every model (default: each model's own window)",
    )
    over_long = provider.add_mutually_exclusive_group()
    over_long.add_argument(
        "--silent-front-discard",
        action="store_true",
        help="drop the oldest messages of an over-long prompt and answer 200 (ollama#3839)",
    )
    over_long.add_argument(
        "--token-truncate",
        action="store_true",
        help="cut an over-long chat completions prompt like llama-server: keep the first "
        "--n-keep tokens and the tail, answer 200",
    )
    over_long.add_argument(
        "--refuse-over-window",
        action="store_true",
        help="refuse a prompt of the window or more like today's llama-server: HTTP 400 "
        "exceed_context_size_error with n_prompt_tokens and n_ctx (/completion and chat "
        "completions)",
    )
    over_long.add_argument(
        "--stop-at-limit",
        action="store_true",
        help="LM Studio's stopAtLimit: a chat completion whose prompt plus requested output "
        "passes the window stops there, finish_reason length and stats.stopReason "
        "contextLengthReached",
    )
    provider.add_argument(
        "--n-keep",
        type=int,
        default=0,
        help="with --token-truncate: the first prompt tokens always kept (-1: all) when the "
        "request gives no n_keep",
    )
    provider.add_argument(
        "--count-scale",
        type=float,
        default=1.0,
        help="report every token count multiplied by this (1.2: a tokenizer making 20%% "
        "more tokens); windows apply in these units",
    )
    provider.add_argument(
        "--count-encoding",
        choices=["cl100k_base", "o200k_base"],
        help="count every model's tokens with this encoding instead of the model's own",
    )
    provider.add_argument(
        "--script",
        help="a JSON or YAML file of scripted answers; once they are used up every request "
        "is refused with a 409 (POST /_ctxledger/reset rewinds the script)",
    )
    provider.add_argument(
        "--loop",
        action="store_true",
        help="start the script again from its first answer once it is used up",
    )
    provider.add_argument("--verbose", action="store_true", help="log every request")
    provider.set_defaults(handler=handle_provider)

    alerts_commands = add_command_group(
        commands,
        "alerts",
        help="alert rules",
        description="Work with the collector's alert rules file (docs/alerting.md).",
    )
    check = alerts_commands.add_parser(
        "check",
        help="check an alert rules file and print every problem with its line",
        description="Check an alert rules file (YAML, or TOML if it ends in .toml): print "
        "'FILE: OK' and exit 0, or every problem, one per line, and exit 1. Secrets written "
        "${NAME} are read from the environment, so set them before checking.",
    )
    check.add_argument("file", metavar="FILE", help="the rules file")
    check.set_defaults(handler=handle_alerts_check)
    add_reports_command(commands)
    add_spool_command(commands)
    return parser
