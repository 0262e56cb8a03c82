"""What the example agents share: their command line, and running against a provider
stand-in started in-process when no provider URL is given."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import ssl
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import ctxledger
from ctxledger_cli.agents.help_text import plain_help
from ctxledger_cli.provider import ProviderStandIn, Step

#: ``plain`` nothing lost, ``failure`` the seed's bug, ``remedy`` its fix.
Mode = Literal["plain", "failure", "remedy"]


@dataclass(frozen=True)
class AgentRun:
    """What one run of an example agent did."""

    answer: str
    tool_call_ids: tuple[str, ...]
    steps: int


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One default TLS context per process: each new client would load the CA bundle
    again (a tenth of a second or more), and the demo starts several clients."""
    return ssl.create_default_context()


def new_call_id(prefix: str) -> str:
    """A call id unique across runs, so each run's reports are found by id."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def parse_arguments(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """The example's flags; ``description`` is its docstring (shown as plain text)."""
    parser = argparse.ArgumentParser(
        description=plain_help(description), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--provider-url",
        help="a running `ctxledger provider` (e.g. http://127.0.0.1:8765) scripted with this "
        "example's script file; default: start a stand-in in this process",
    )
    parser.add_argument(
        "--collector-url",
        help="export the spans to this collector (e.g. http://127.0.0.1:4318); "
        "default: judge locally only",
    )
    parser.add_argument("--ledger", default="stderr", help="stderr, stdout, a file or off")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--failure", action="store_true", help="switch on the seed's failure")
    modes.add_argument("--remedy", action="store_true", help="switch on the remedy")
    return parser.parse_args(argv)


def mode_of(args: argparse.Namespace) -> Mode:
    return "failure" if args.failure else "remedy" if args.remedy else "plain"


def run_with_provider(
    provider_url: str | None,
    script: Callable[[], list[Step]],
    agent: Callable[[str], AgentRun],
) -> AgentRun:
    """Run ``agent`` against ``provider_url``, or against an in-process stand-in that
    answers with ``script()``."""
    if provider_url:
        return agent(provider_url.rstrip("/"))
    with ProviderStandIn(script=script()) as stand_in:
        return agent(stand_in.url)


def _status_error_types() -> tuple[type[Exception], ...]:
    found: list[type[Exception]] = []
    for client in ("openai", "anthropic"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(client).APIStatusError)
    return tuple(found)


def provider_refusal(error: BaseException) -> str | None:
    """One line for an HTTP error the provider answered (the ``openai`` or ``anthropic``
    client's ``APIStatusError``, also when a framework raised it from another error);
    ``None`` for any other error."""
    status_errors = _status_error_types()
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, status_errors):
            body = getattr(seen, "body", None)
            message = _message_in(body) or str(seen)
            return f"the provider answered HTTP {getattr(seen, 'status_code', '?')}: {message}"
        seen = seen.__cause__ or seen.__context__
    return None


def _message_in(body: object) -> str | None:
    """The ``message`` of an OpenAI error body (``{"message": …}`` as the client keeps it)
    or of an Anthropic one (``{"error": {"message": …}}``)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) else None


def example_main(
    service_name: str,
    description: str,
    argv: Sequence[str] | None,
    run: Callable[[str | None, Mode], AgentRun],
) -> int:
    """The examples' ``main``: configure the SDK, run the agent, print what it found."""
    args = parse_arguments(description, argv)
    ctxledger.configure(
        service_name=service_name,
        endpoint=args.collector_url,
        export=args.collector_url is not None,
        ledger=args.ledger,
    )
    try:
        result = run(args.provider_url, mode_of(args))
    except Exception as error:
        refusal = provider_refusal(error)
        if refusal is None:
            raise
        print(f"{service_name}: {refusal}", file=sys.stderr)
        return 1
    delivered = ctxledger.flush()
    print(f"answer after {result.steps} steps: {result.answer}")
    print(f"tool calls: {', '.join(result.tool_call_ids)}")
    if args.collector_url and not delivered:
        print(f"not every span reached {args.collector_url}", file=sys.stderr)
        return 1
    return 0
