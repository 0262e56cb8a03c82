"""A lost tool result, counted once. Pure; stdlib only.

A tool result (one tool call in one run) has a journey per request it travelled in. A
result cut in request 2 and re-sent cut in request 3 is one loss, not two: the journey
where it was *first lost* is its loss, and each later losing journey of the same call
says it is *still missing*. Counts of lost results, their lost items and their alerts
follow the first lost journey only; journey counts stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxledger.verdicts.model import Report
from ctxledger.verdicts.vocabulary import LOSING_VERDICTS

#: (trace id, tool call id, request id)
JourneyKey = tuple[str, str, str | None]


def sent_order(step: int | None, request_key: str) -> tuple[bool, int, str]:
    """The order a result's journeys were sent in: by step, journeys without a step
    last, ties by request id (``""`` for the journey without a request)."""
    return (step is None, step or 0, request_key)


def first_losses(reports: Iterable[Report]) -> set[JourneyKey]:
    """The journey of each lost result where it was first lost: per (trace, call), its
    losing journey earliest in :func:`sent_order`."""
    first: dict[tuple[str, str], Report] = {}
    for report in reports:
        if report.verdict not in LOSING_VERDICTS:
            continue
        call = (report.trace_id, report.tool_call_id)
        held = first.get(call)
        order = sent_order(report.step, report.request_id or "")
        if held is None or order < sent_order(held.step, held.request_id or ""):
            first[call] = report
    return {report.key for report in first.values()}
