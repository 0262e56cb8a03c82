"""What the framework examples share with the others (``ctxledger_cli.agents.common``):
the command line (``--failure``, ``--remedy``, ``--provider-url``, ``--collector-url``,
``--ledger``), the provider stand-in they start unless given a provider, and the summary
each prints last."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import ctxledger
from ctxledger._runs import RunState
from ctxledger_cli.agents.common import mode_of, parse_arguments


def parse_flags(description: str) -> argparse.Namespace:
    flags = parse_arguments(description, None)
    flags.mode = mode_of(flags)
    return flags


@contextlib.contextmanager
def provider(provider_url: str | None, script: list[Any]) -> Iterator[str]:
    """The OpenAI base URL to call: ``provider_url``'s, or a stand-in's answering
    ``script``."""
    if provider_url:
        yield provider_url.rstrip("/") + "/v1"
        return
    from ctxledger_cli.provider import ProviderStandIn

    with ProviderStandIn(script=script) as stand_in:
        yield stand_in.openai_base_url


def configure(service_name: str, flags: argparse.Namespace) -> None:
    """Export to ``--collector-url`` if given; the local ledger prints LOSS lines."""
    ctxledger.configure(
        service_name=service_name,
        endpoint=flags.collector_url,
        export=flags.collector_url is not None,
        ledger=flags.ledger,
    )


def summary(state: RunState, calls: list[str], outcome: str) -> dict[str, Any]:
    """What a run did: its trace, the tool calls it made, the model's last word."""
    trace_id = f"{state.parent.trace_id:032x}" if state.parent is not None else ""
    return {"trace_id": trace_id, "calls": calls, "outcome": outcome}


def finish(run: dict[str, Any]) -> int:
    """Print the outcome, flush the measurements, then print the line tests read."""
    print(run["outcome"])
    delivered = ctxledger.flush(30)
    print(json.dumps(run, ensure_ascii=False))
    return 0 if delivered else 1
