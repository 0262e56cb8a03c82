"""Alert events and notifications, written inside the collector's transactions.

* ``record_events`` runs in the ingest transaction: one event per (rule, journey), unique,
  so a journey alerts a rule once whatever replica judged it; a group whose window is open
  gets its notification in that same transaction.
* ``flush_due_groups`` and ``resolve_quiet_groups`` run from the delivery worker: pending
  events of a group whose window has passed, and groups quiet long enough to resolve.

Every decision about a group is taken with its row locked (``SELECT … FOR UPDATE`` on
PostgreSQL; SQLite writers are serialised), so two collectors never notify a group twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ctxledger.verdicts import Report
from ctxledger_collector.alerts.config import AlertsConfig
from ctxledger_collector.alerts.match import matching_rules
from ctxledger_collector.alerts.payload import build_payload
from ctxledger_collector.statements import Statements
from ctxledger_collector.tables import ALERT_EVENTS, ALERT_GROUPS, NOTIFICATIONS

GroupKey = tuple[str, str, str]  # rule, agent, tool
JourneyKey = tuple[str, str, str]  # trace id, tool call id, request key


@dataclass(frozen=True)
class AlertContext:
    config: AlertsConfig
    dashboard_url: str | None = None
    #: Events wait this long before they are notified, so stages that arrive out of order
    #: (a declaration after the loss, a manifest before the stages) correct them first.
    settle_s: float = 0.0


def _insert(dialect: str) -> Any:
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


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
    alerted = _notified_results(session, {key[:3] for key in wanted})
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
            _touch_group(session, dialect, group, severities[group], now)
        else:
            _locked_group(session, group)
    if withdrawn:
        session.execute(delete(ALERT_EVENTS).where(columns.id.in_([r.id for r in withdrawn])))
    if not wanted:
        return 0
    stmt = _insert(dialect)(ALERT_EVENTS)
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
    """The stored events of these (trace, call, request key) journeys, of every rule: one
    statement joining the keys to ``ix_alert_events_result``, as ingest reads its rows."""
    connection = session.connection()
    rows = Statements(connection.dialect.name).select_keys(
        connection,
        ALERT_EVENTS,
        _StoredEvent._fields,
        ("trace_id", "tool_call_id", "request_key"),
        journeys,
        index="ix_alert_events_result",
    )
    return [_StoredEvent(*row) for row in rows]


def _notified_results(
    session: Session, results: set[tuple[str, str, str]]
) -> set[tuple[str, str, str]]:
    """Which of the (rule, trace, call) results already have a notified event."""
    connection = session.connection()
    rows = Statements(connection.dialect.name).select_keys(
        connection,
        ALERT_EVENTS,
        ("rule", "trace_id", "tool_call_id", "batch_id"),
        ("rule", "trace_id", "tool_call_id"),
        sorted(results),
        index="ix_alert_events_journey",
    )
    return {(rule, trace_id, call_id) for rule, trace_id, call_id, batch_id in rows if batch_id}


def _touch_group(session: Session, dialect: str, key: GroupKey, severity: str, now: float) -> None:
    stmt = _insert(dialect)(ALERT_GROUPS).values(
        rule=key[0],
        agent=key[1],
        tool=key[2],
        severity=severity,
        state="new",
        first_event_at=now,
        last_event_at=now,
        last_notified_at=None,
    )
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=["rule", "agent", "tool"], set_={"last_event_at": now}
        )
    )


def _locked_group(session: Session, key: GroupKey) -> Any:
    query = select(ALERT_GROUPS).where(
        ALERT_GROUPS.c.rule == key[0], ALERT_GROUPS.c.agent == key[1], ALERT_GROUPS.c.tool == key[2]
    )
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    return session.execute(query).first()


def _enqueue(
    session: Session,
    key: GroupKey,
    status: str,
    severity: str,
    events: list[dict[str, Any]],
    window_start: float,
    context: AlertContext,
    now: float,
) -> str:
    batch_id = f"batch_{uuid.uuid4().hex}"
    payload = build_payload(
        status=status,
        rule=key[0],
        severity=severity,
        agent=key[1],
        tool=key[2],
        events=events,
        window_start=window_start,
        window_end=now,
        batch_id=batch_id,
        dashboard_url=context.dashboard_url,
    )
    for sink in context.config.sinks:
        session.execute(
            insert(NOTIFICATIONS).values(
                webhook_id=f"msg_{uuid.uuid4().hex}",
                batch_id=batch_id,
                rule=key[0],
                agent=key[1],
                tool=key[2],
                status=status,
                sink=sink.name,
                sink_type=sink.type,
                payload=payload,
                created_at=now,
                delivery="pending",
                attempts=0,
                next_attempt_at=now,
            )
        )
    return batch_id


def notify_group_if_due(session: Session, key: GroupKey, context: AlertContext, now: float) -> bool:
    """Notify the group's pending events unless a notification went out within the
    group window. Call inside a transaction; locks the group row."""
    group = _locked_group(session, key)
    if group is None:
        return False
    window = context.config.group_window_s
    recently = group.last_notified_at is not None and now - group.last_notified_at < window
    if group.state == "firing" and recently:
        return False
    pending = (
        session.execute(
            select(ALERT_EVENTS).where(
                ALERT_EVENTS.c.rule == key[0],
                ALERT_EVENTS.c.agent == key[1],
                ALERT_EVENTS.c.tool == key[2],
                ALERT_EVENTS.c.batch_id.is_(None),
                # settled: old enough that out-of-order stages had their chance to correct it
                ALERT_EVENTS.c.created_at <= now - context.settle_s,
            )
        )
        .mappings()
        .all()
    )
    if not pending:
        return False
    events = [dict(e) for e in pending]
    start = group.last_notified_at or min(e["created_at"] for e in events)
    batch_id = _enqueue(session, key, "firing", group.severity, events, start, context, now)
    session.execute(
        update(ALERT_EVENTS)
        .where(ALERT_EVENTS.c.id.in_([e["id"] for e in events]))
        .values(batch_id=batch_id)
    )
    session.execute(
        update(ALERT_GROUPS)
        .where(
            ALERT_GROUPS.c.rule == key[0],
            ALERT_GROUPS.c.agent == key[1],
            ALERT_GROUPS.c.tool == key[2],
        )
        .values(state="firing", last_notified_at=now)
    )
    return True


def flush_due_groups(engine: Engine, context: AlertContext, now: float) -> int:
    """Notify the pending events of every group whose window has passed."""
    with Session(engine) as session:
        keys = sorted(
            {
                (r[0], r[1], r[2])
                for r in session.execute(
                    select(ALERT_EVENTS.c.rule, ALERT_EVENTS.c.agent, ALERT_EVENTS.c.tool)
                    .where(ALERT_EVENTS.c.batch_id.is_(None))
                    .distinct()
                )
            }
        )
    sent = 0
    for key in keys:
        with Session(engine) as session, session.begin():
            sent += notify_group_if_due(session, key, context, now)
    return sent


def resolve_quiet_groups(engine: Engine, context: AlertContext, now: float) -> int:
    """Send "resolved" for firing groups without a new event for ``resolve_after_s``."""
    cutoff = now - context.config.resolve_after_s
    with Session(engine) as session:
        keys = [
            (r.rule, r.agent, r.tool)
            for r in session.execute(
                select(ALERT_GROUPS).where(
                    ALERT_GROUPS.c.state == "firing", ALERT_GROUPS.c.last_event_at <= cutoff
                )
            )
        ]
    resolved = 0
    for key in sorted(keys):
        with Session(engine) as session, session.begin():
            group = _locked_group(session, key)
            if group is None or group.state != "firing" or group.last_event_at > cutoff:
                continue
            _enqueue(
                session, key, "resolved", group.severity, [], group.last_event_at, context, now
            )
            session.execute(
                update(ALERT_GROUPS)
                .where(
                    ALERT_GROUPS.c.rule == key[0],
                    ALERT_GROUPS.c.agent == key[1],
                    ALERT_GROUPS.c.tool == key[2],
                )
                .values(state="resolved")
            )
            resolved += 1
    return resolved
