"""What the example agents share: their flags, the provider stand-in they run against
unless given a real base URL, and the one summary line each prints last."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import ctxledger
from ctxledger._runs import RunState


def parse_flags(description: str, failure: str, remedy: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--failure", action="store_true", help=failure)
    mode.add_argument("--remedy", action="store_true", help=remedy)
    parser.add_argument(
        "--base-url",
        help="an OpenAI-compatible base URL (default: a provider stand-in started here)",
    )
    flags = parser.parse_args()
    flags.mode = "failure" if flags.failure else "remedy" if flags.remedy else "plain"
    return flags


@contextlib.contextmanager
def provider(base_url: str | None, script: list[Any]) -> Iterator[str]:
    """The OpenAI base URL to call: ``base_url``, or a stand-in answering ``script``."""
    if base_url:
        yield base_url
        return
    from ctxledger_cli.provider import ProviderStandIn

    with ProviderStandIn(script=script) as stand_in:
        yield stand_in.openai_base_url


def configure(service_name: str) -> None:
    """Export to the collector (``CTXLEDGER_ENDPOINT``, default 127.0.0.1:4318) and print
    the local ledger's LOSS lines on stderr unless ``CTXLEDGER_LEDGER`` says otherwise."""
    ctxledger.configure(
        service_name=service_name, ledger=os.environ.get("CTXLEDGER_LEDGER", "stderr")
    )


def trace_id(state: RunState) -> str:
    return f"{state.parent.trace_id:032x}" if state.parent is not None else ""


def summary(state: RunState, calls: list[str], outcome: str) -> dict[str, Any]:
    """What a run did: its trace, the tool calls it made, the model's last word."""
    return {"trace_id": trace_id(state), "calls": calls, "outcome": outcome}


def finish(run: dict[str, Any]) -> None:
    """Print the outcome, flush the measurements, then print the line tests read."""
    print(run["outcome"])
    ctxledger.flush(30)
    print(json.dumps(run, ensure_ascii=False))
