"""What the example agents share: their command line, and running against a provider
stand-in started in-process when no provider URL is given."""

from __future__ import annotations

import argparse
import functools
import ssl
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import ctxledger
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
    parser = argparse.ArgumentParser(description=description)
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
    result = run(args.provider_url, mode_of(args))
    delivered = ctxledger.flush()
    print(f"answer after {result.steps} steps: {result.answer}")
    print(f"tool calls: {', '.join(result.tool_call_ids)}")
    if args.collector_url and not delivered:
        print(f"not every span reached {args.collector_url}", file=sys.stderr)
        return 1
    return 0
