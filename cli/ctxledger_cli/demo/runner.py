"""``ctxledger demo``: run the incidents under the SDK (real agents on the real ``openai``
and ``anthropic`` clients and on LangGraph, the OpenAI Agents SDK and MCP, against an
in-process provider stand-in), print what the local ledger found and, with an endpoint,
what the collector decided. An incident whose framework is not installed is skipped
with one line naming the extra that brings it."""

from __future__ import annotations

import importlib.util
import sys
import urllib.error
from collections.abc import Iterable

import ctxledger
from ctxledger.verdicts import Report
from ctxledger.visible import visible
from ctxledger_cli.demo.collector_verdicts import print_verdicts
from ctxledger_cli.demo.delivery import deliver, nothing_answers, unreachable_line
from ctxledger_cli.demo.incidents import run_all_incidents, skipped_incidents
from ctxledger_cli.demo.real_agents import run_seed_004
from ctxledger_cli.server_extra import install_hint

#: The demo's agents run on these clients; the ``server`` extra brings them.
DEMO_CLIENTS = ("openai", "anthropic")
DEMO_EXTRA_HINT = (
    "ctxledger demo runs real agents on the openai and anthropic clients: " + install_hint("server")
)


def missing_clients() -> list[str]:
    return [name for name in DEMO_CLIENTS if importlib.util.find_spec(name) is None]


def run_demo(endpoint: str | None, ledger: str, everything: bool) -> int:
    """Run the incidents; with an endpoint, print the collector's verdicts."""
    missing = missing_clients()
    if missing:
        print(f"ctxledger: {DEMO_EXTRA_HINT} ({', '.join(missing)} missing)", file=sys.stderr)
        return 1
    if endpoint is not None and (problem := nothing_answers(endpoint)) is not None:
        print(unreachable_line(endpoint, problem), file=sys.stderr)
        return 1
    client = ctxledger.configure(
        service_name="ctxledger-demo",
        endpoint=endpoint,
        export=endpoint is not None,
        ledger=ledger,
    )
    expected = None
    if everything:
        for reason in skipped_incidents().values():
            print(f"ctxledger demo: {reason}", file=sys.stderr)
        expected = run_all_incidents()
    else:
        run_seed_004()
    not_delivered = deliver(client, endpoint) if endpoint is not None else None
    if endpoint is None:
        ctxledger.flush()
    stats = ctxledger.stats()
    if client.ledger is not None:
        summary = ledger_summary(client.ledger.reports, client.ledger.still_missing)
        print(summary, file=sys.stderr)
    if endpoint is None:
        return 0
    if not_delivered is not None:
        print(not_delivered, file=sys.stderr)
        return 1
    print(
        f"exported {stats.spans_exported} spans to {endpoint} ({stats.dropped} dropped)",
        file=sys.stderr,
    )
    try:
        agreed = print_verdicts(endpoint, sys.stdout, expected)
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


def ledger_summary(reports: Iterable[Report], still_missing: Iterable[Report] = ()) -> str:
    """The losses the local ledger announced, one line each (each lost result once, the
    later steps that re-sent it still missing named on its line), under a count."""
    losses = [r for r in reports if r.verdict != "intact"]
    resent: dict[tuple[str, str], list[str]] = {}
    for r in still_missing:
        step = "-" if r.step is None else str(r.step)
        resent.setdefault((r.trace_id, r.tool_call_id), []).append(step)
    lines = [f"\n{len(losses)} loss(es) found by the local ledger:"]
    for r in losses:
        steps = resent.get((r.trace_id, r.tool_call_id))
        again = f" (re-sent still missing at step {', '.join(steps)})" if steps else ""
        lines.append(
            f"  {r.verdict:<9} {visible(r.tool_name or '?')}[{visible(r.tool_call_id)}] "
            f"lost {r.lost_items} items{again}"
        )
    return "\n".join(lines)
