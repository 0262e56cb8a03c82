"""Ask a collector what it decided about the demo incidents' tool calls, and print it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

from ctxledger.verdicts import VERDICT_SEVERITY, worst
from ctxledger.visible import visible
from ctxledger_cli.demo.incidents import EXPECTED_VERDICTS
from ctxledger_cli.query_api import fetch_reports

#: Incident name -> {tool call id: the verdict the rules must give it}.
Expectations = Mapping[str, Mapping[str, str]]


def collector_verdicts(
    endpoint: str, expected: Expectations = EXPECTED_VERDICTS, wait_s: float = 15.0
) -> dict[str, dict[str, Any]]:
    """Per expected tool call id: the report of the worst verdict the collector gives its
    journeys (the earliest sent, when several have it). Waits (up to ``wait_s``) until
    every call has a report with its expected verdict, since journeys arrive and settle
    one by one."""
    wanted = {call_id: verdict for calls in expected.values() for call_id, verdict in calls.items()}
    deadline = time.monotonic() + wait_s
    while True:
        found: dict[str, dict[str, Any]] = {}
        for call_id in wanted:
            reports = fetch_reports(endpoint, call_id)
            if reports:
                verdict = worst(r["verdict"] for r in reports)
                found[call_id] = min(
                    (r for r in reports if r["verdict"] == verdict), key=_sent_order
                )
        agreed = all(found.get(c, {}).get("verdict") == v for c, v in wanted.items())
        if agreed or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def _sent_order(report: Mapping[str, Any]) -> tuple[bool, int]:
    """Journeys in the order they were sent: by step, those without a step last."""
    return (report["step"] is None, report["step"] or 0)


def _shown(calls: Mapping[str, str]) -> list[str]:
    """The calls of an incident worth a line: those expected to lose, worst first, or the
    first call when the incident expects every call intact."""
    losing = [c for c, v in calls.items() if v != "intact"]
    losing.sort(key=lambda c: -VERDICT_SEVERITY[calls[c]])
    return losing or list(calls)[:1]


def _step_shown(report: Mapping[str, Any]) -> int | None:
    """The step a verdict line names: where the result was first lost (a result re-sent
    still missing is lost where it was first cut, as the API's deep link says), else the
    step of the journey."""
    first: int | None = report.get("first_lost_step")
    step: int | None = report["step"]
    return step if first is None else first


def _lost(report: Mapping[str, Any]) -> str:
    """What the report lost, in items where it counts them, else in tokens; and where,
    when that is the model server (the request itself left whole)."""
    if report["lost_items"]:
        lost = f"lost {report['lost_items']} items"
    elif report.get("lost_tokens"):
        lost = f"lost {report['lost_tokens']:,} tokens"
    else:
        return ""
    at_server = report.get("layer_name") == "model_server"
    return lost + (" at the model server" if at_server else "")


def print_verdicts(endpoint: str, out: TextIO, expected: Expectations | None = None) -> bool:
    """Print one line per losing call of each incident (``expected``: the incidents that
    ran, by default all of them); True when the collector agrees with every expectation,
    the intact calls included."""
    expected = EXPECTED_VERDICTS if expected is None else expected
    found = collector_verdicts(endpoint, expected)
    agreed = True
    quiet = 0
    out.write(f"\nVerdicts from the collector at {endpoint}:\n")
    for name, calls in expected.items():
        shown = _shown(calls)
        for call_id in [*shown, *(c for c in calls if c not in shown)]:
            verdict_expected = calls[call_id]
            report = found.get(call_id)
            ok = report is not None and report["verdict"] == verdict_expected
            agreed = agreed and ok
            if ok and call_id not in shown:
                quiet += 1
            elif report is None:
                out.write(f"  {name:<26} no report yet for {call_id}\n")
            else:
                verdict = report["verdict"]
                mark = "ok" if ok else f"EXPECTED {verdict_expected}"
                lost = _lost(report)
                out.write(
                    f"  {name:<26} {verdict:<9} {visible(report['tool_name'] or '?')}"
                    f"[{visible(call_id)}] "
                    f"step {_step_shown(report)} {lost}  ({mark})\n"
                )
    out.write(f"  (+{quiet} intact calls alongside)\n")
    out.write(f"  browse: {endpoint.rstrip('/')}/api/v1/runs  ·  API docs: {endpoint}/docs\n")
    return agreed


def seed_004_dashboard_link(endpoint: str) -> str | None:
    """The dashboard's page of seed 004's silent loss, as the collector links it; None
    when the collector has no such report or no dashboard URL configured."""
    ((call_id, verdict),) = [
        (c, v) for c, v in EXPECTED_VERDICTS["seed_004_silent_loss"].items() if v == "silent"
    ]
    try:
        reports = fetch_reports(endpoint, call_id, verdict=verdict, limit=1, timeout_s=5)
    except (OSError, ValueError, KeyError):
        return None
    link = reports[0]["links"].get("dashboard") if reports else None
    return str(link) if link else None
