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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ctxledger.verdicts import Report
from ctxledger_collector.alerts.config import AlertsConfig
from ctxledger_collector.alerts.match import matching_rules
from ctxledger_collector.alerts.payload import build_payload
from ctxledger_collector.tables import ALERT_EVENTS, ALERT_GROUPS, NOTIFICATIONS

GroupKey = tuple[str, str, str]  # rule, agent, tool


@dataclass(frozen=True)
class AlertContext:
    config: AlertsConfig
    dashboard_url: str | None = None


def _insert(dialect: str) -> Any:
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def record_events(
    session: Session, reports: Iterable[Report], context: AlertContext, now: float
) -> int:
    """Write the events the reports trigger; notify groups whose window is open.
    Returns how many events are new."""
    dialect = session.get_bind().dialect.name
    rows = []
    severities: dict[GroupKey, str] = {}
    for report in reports:
        for rule in matching_rules(context.config.rules, report):
            key = (rule.name, report.agent_name or "", report.tool_name or "")
            severities[key] = rule.severity
            rows.append(
                {
                    "rule": rule.name,
                    "severity": rule.severity,
                    "agent": key[1],
                    "tool": key[2],
                    "trace_id": report.trace_id,
                    "tool_call_id": report.tool_call_id,
                    "request_key": report.request_id or "",
                    "verdict": report.verdict,
                    "step": report.step,
                    "lost_items": report.lost_items,
                    "lost_tokens": report.lost_tokens,
                    "lost_priority_items": report.lost_priority_items,
                    "observed_at": max((m.observed_at for m in report.stages), default=now),
                    "created_at": now,
                }
            )
    if not rows:
        return 0
    stmt = (
        _insert(dialect)(ALERT_EVENTS)
        .on_conflict_do_nothing(index_elements=["rule", "trace_id", "tool_call_id", "request_key"])
        .returning(ALERT_EVENTS.c.rule, ALERT_EVENTS.c.agent, ALERT_EVENTS.c.tool)
    )
    new_keys: set[GroupKey] = set()
    new_events = 0
    for row in rows:  # one statement each: RETURNING tells which rows were new
        inserted = session.execute(stmt, row).first()
        if inserted is not None:
            new_events += 1
            new_keys.add((inserted[0], inserted[1], inserted[2]))
    for key in sorted(new_keys):  # sorted: replicas lock groups in one order
        _touch_group(session, dialect, key, severities[key], now)
        notify_group_if_due(session, key, context, now)
    return new_events


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
