"""Alert events, written inside the ingest transaction (``record_events``): one event per
(rule, journey), unique, so a journey alerts a rule once whatever replica judged it; a
group whose window is open gets its notification in that same transaction
(``ctxledger_collector.alerts.groups``, which the delivery worker also runs).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import delete
from sqlalchemy.orm import Session

from ctxledger.verdicts import Report
from ctxledger_collector.alerts.alerted import notified_results, stored_events
from ctxledger_collector.alerts.context import AlertContext
from ctxledger_collector.alerts.groups import (
    insert_for,
    locked_group,
    notify_group_if_due,
    touch_group,
)
from ctxledger_collector.alerts.match import matching_rules
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS

__all__ = ["AlertContext", "record_events"]

JourneyKey = tuple[str, str, str]  # trace id, tool call id, request key


def record_events(
    session: Session,
    reports: Iterable[Report],
    context: AlertContext,
    now: float,
    still_missing: Collection[tuple[str, str, str]] = (),
) -> int:
    """Bring the events of the journeys just judged in line with their verdicts: add the
    rules they now match, correct or withdraw events not yet notified (a verdict can
    change while stages arrive out of order). Notified events are history and stay.
    A lost result alerts once, at the journey where it was first lost: the journeys in
    ``still_missing`` (trace, call, request key: losing, but not first lost) match no
    rule, and their events not yet notified are withdrawn.
    Returns how many events are new or changed."""
    dialect = session.get_bind().dialect.name
    judged: set[tuple[str, str, str]] = set(still_missing)
    wanted: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for report in reports:
        journey = (report.trace_id, report.tool_call_id, report.request_id or "")
        judged.add(journey)
        if journey in still_missing:
            continue
        for rule in matching_rules(context.config.rules, report):
            wanted[(rule.name, journey[0], journey[1], journey[2])] = {
                "rule": rule.name,
                "severity": rule.severity,
                "agent": report.agent_name or "",
                "tool": report.tool_name or "",
                "trace_id": journey[0],
                "tool_call_id": journey[1],
                "request_key": journey[2],
                "verdict": report.verdict,
                "step": report.step,
                "lost_items": report.lost_items,
                "lost_tokens": report.lost_tokens,
                "tokens_unknown": report.lost_tokens_unknown is not None,
                "lost_priority_items": report.lost_priority_items,
                "observed_at": max((m.observed_at for m in report.stages), default=now),
                "created_at": now,
            }
    if not judged:
        return 0
    columns = ALERT_EVENTS.c
    existing = _events_of_journeys(session, sorted(judged))
    notified = {
        (row.rule, row.trace_id, row.tool_call_id, row.request_key)
        for row in existing
        if row.batch_id is not None
    }
    wanted = {key: event for key, event in wanted.items() if key not in notified}
    # A result alerted (and notified) at one journey is not alerted again at another:
    # out of order, a later request's journey may have looked first lost for a while.
    alerted = notified_results(session, {key[:3] for key in wanted})
    wanted = {key: event for key, event in wanted.items() if key[:3] not in alerted}
    withdrawn = [
        row
        for row in existing
        if row.batch_id is None
        and (row.rule, row.trace_id, row.tool_call_id, row.request_key) not in wanted
    ]
    severities = {(e["rule"], e["agent"], e["tool"]): e["severity"] for e in wanted.values()}
    # Lock every group this touches first, in one order (the delivery worker too locks a
    # group before its events), so replicas and the worker never deadlock.
    for group in sorted(set(severities) | {(r.rule, r.agent, r.tool) for r in withdrawn}):
        if group in severities:
            touch_group(session, dialect, group, severities[group], now)
        else:
            locked_group(session, group)
    if withdrawn:
        # Another replica may have notified one since it was read: notified events stay.
        session.execute(
            delete(ALERT_EVENTS).where(
                columns.id.in_([r.id for r in withdrawn]), columns.batch_id.is_(None)
            )
        )
    if not wanted:
        return 0
    stmt = insert_for(dialect)(ALERT_EVENTS)
    corrected = {
        name: stmt.excluded[name]
        for name in (
            "severity",
            "agent",
            "tool",
            "verdict",
            "step",
            "lost_items",
            "lost_tokens",
            "tokens_unknown",
            "lost_priority_items",
            "observed_at",
        )
    }
    stmt = stmt.on_conflict_do_update(
        index_elements=["rule", "trace_id", "tool_call_id", "request_key"],
        set_=corrected,
        where=columns.batch_id.is_(None),  # notified events are not rewritten
    ).returning(columns.id)
    changed = sum(1 for key in sorted(wanted) if session.execute(stmt, wanted[key]).first())
    if context.settle_s <= 0:
        for group in sorted(severities):
            notify_group_if_due(session, group, context, now)
    return changed


class _StoredEvent(NamedTuple):
    id: int
    rule: str
    agent: str
    tool: str
    batch_id: str | None
    trace_id: str
    tool_call_id: str
    request_key: str


def _events_of_journeys(session: Session, journeys: Sequence[JourneyKey]) -> list[_StoredEvent]:
    """The stored events of these (trace, call, request key) journeys, of every rule."""
    rows = stored_events(
        session,
        _StoredEvent._fields,
        ("trace_id", "tool_call_id", "request_key"),
        journeys,
        "ix_alert_events_result",
    )
    return [_StoredEvent(*row) for row in rows]
