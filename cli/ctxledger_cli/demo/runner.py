"""``ctxledger demo``: run the scripted incidents under the SDK, print what the local
ledger found and, with an endpoint, what the collector there decided."""

from __future__ import annotations

import sys
import urllib.error
from collections.abc import Iterable

import ctxledger
from ctxledger.verdicts import Report
from ctxledger_cli.demo.collector_verdicts import print_verdicts
from ctxledger_cli.demo.incidents import run_all_incidents
from ctxledger_cli.demo.seed_004_silent_loss import run_seed_004


def run_demo(endpoint: str | None, ledger: str, everything: bool) -> int:
    """Run the scripted incidents; with an endpoint, print the collector's verdicts."""
    client = ctxledger.configure(
        service_name="ctxledger-demo",
        endpoint=endpoint,
        export=endpoint is not None,
        ledger=ledger,
    )
    if everything:
        run_all_incidents()
    else:
        run_seed_004()
    ctxledger.flush()
    stats = ctxledger.stats()
    if client.ledger is not None:
        print(ledger_summary(client.ledger.reports), file=sys.stderr)
    if endpoint is None:
        return 0
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


def ledger_summary(reports: Iterable[Report]) -> str:
    """The losses the local ledger announced, one line each, under a count."""
    losses = [r for r in reports if r.verdict != "intact"]
    lines = [f"\n{len(losses)} loss(es) found by the local ledger:"]
    lines += [
        f"  {r.verdict:<9} {r.tool_name}[{r.tool_call_id}] lost {r.lost_items} items"
        for r in losses
    ]
    return "\n".join(lines)
