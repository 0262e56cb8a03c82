"""Ask a collector what it decided about the demo incidents, and print it."""

from __future__ import annotations

import time
from typing import Any, TextIO

from ctxledger.verdicts import worst
from ctxledger_cli.demo.incidents import EXPECTED_VERDICTS, INCIDENT_CALL_IDS
from ctxledger_cli.query_api import fetch_reports


def collector_verdicts(endpoint: str, wait_s: float = 15.0) -> dict[str, dict[str, Any]]:
    """Per incident: the worst verdict the collector gives its tool call, and that report.
    Waits (up to ``wait_s``) until every incident's call has a report."""
    deadline = time.monotonic() + wait_s
    while True:
        found: dict[str, dict[str, Any]] = {}
        for name, (call_id, _) in EXPECTED_VERDICTS.items():
            reports = fetch_reports(endpoint, call_id)
            if reports:
                verdict = worst(r["verdict"] for r in reports)
                found[name] = next(r for r in reports if r["verdict"] == verdict)
        if len(found) == len(EXPECTED_VERDICTS) or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def print_verdicts(endpoint: str, out: TextIO) -> bool:
    """Print one line per incident; True when the collector agrees with every expectation."""
    found = collector_verdicts(endpoint)
    agreed = True
    out.write(f"\nVerdicts from the collector at {endpoint}:\n")
    for name, (call_id, expected) in EXPECTED_VERDICTS.items():
        report = found.get(name)
        if report is None:
            out.write(f"  {name:<26} no report yet for {call_id}\n")
            agreed = False
            continue
        verdict = report["verdict"]
        agreed = agreed and verdict == expected
        mark = "ok" if verdict == expected else f"EXPECTED {expected}"
        lost = f"lost {report['lost_items']} items" if report["lost_items"] else ""
        out.write(
            f"  {name:<26} {verdict:<9} {report['tool_name'] or '?'}[{call_id}] "
            f"step {report['step']} {lost}  ({mark})\n"
        )
    others = sum(len(ids) - 1 for ids in INCIDENT_CALL_IDS.values())
    out.write(f"  (+{others} clean journeys alongside)\n")
    out.write(f"  browse: {endpoint.rstrip('/')}/api/v1/runs  ·  API docs: {endpoint}/docs\n")
    return agreed


def seed_004_dashboard_link(endpoint: str) -> str | None:
    """The dashboard's page of seed 004's silent loss, as the collector links it; None
    when the collector has no such report or no dashboard URL configured."""
    call_id, verdict = EXPECTED_VERDICTS["seed_004_silent_loss"]
    try:
        reports = fetch_reports(endpoint, call_id, verdict=verdict, limit=1, timeout_s=5)
    except (OSError, ValueError, KeyError):
        return None
    link = reports[0]["links"].get("dashboard") if reports else None
    return str(link) if link else None
