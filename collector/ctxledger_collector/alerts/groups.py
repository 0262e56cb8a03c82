"""Alert groups and their notifications: one group per (rule, agent, tool), notified at
most once per group window and resolved once it has been quiet long enough.

* ``notify_group_if_due`` writes a group's pending events into one notification per sink
  (the outbox the delivery worker sends); the ingest transaction calls it when events
  need not settle, the delivery worker through ``flush_due_groups``.
* ``resolve_quiet_groups`` sends "resolved" for a firing group without new events.

Every decision about a group is taken with its row locked (``SELECT … FOR UPDATE`` on
PostgreSQL; SQLite writers are serialised), so two collectors never notify a group twice,
nor a result twice (``ctxledger_collector.alerts.alerted``).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine, and_, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ctxledger_collector.alerts.alerted import superseded_events
from ctxledger_collector.alerts.context import AlertContext, GroupKey
from ctxledger_collector.alerts.payload import build_payload
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS, ALERT_GROUPS, NOTIFICATIONS


def insert_for(dialect: str) -> Any:
    """The dialect's INSERT, which has ``on_conflict_do_update``."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def touch_group(session: Session, dialect: str, key: GroupKey, severity: str, now: float) -> None:
    stmt = insert_for(dialect)(ALERT_GROUPS).values(
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


def _is_group(key: GroupKey) -> tuple[Any, ...]:
    """The conditions that select the group ``key``'s row."""
    groups = ALERT_GROUPS.c
    return (groups.rule == key[0], groups.agent == key[1], groups.tool == key[2])


def locked_group(session: Session, key: GroupKey) -> Any:
    query = select(ALERT_GROUPS).where(*_is_group(key))
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
    group = locked_group(session, key)
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
    candidates = [dict(e) for e in pending]
    superseded = superseded_events(session, candidates)
    if superseded:
        session.execute(delete(ALERT_EVENTS).where(ALERT_EVENTS.c.id.in_(sorted(superseded))))
    events = [e for e in candidates if e["id"] not in superseded]
    if not events:
        return False
    start = group.last_notified_at or min(e["created_at"] for e in events)
    batch_id = _enqueue(session, key, "firing", group.severity, events, start, context, now)
    session.execute(
        update(ALERT_EVENTS)
        .where(ALERT_EVENTS.c.id.in_([e["id"] for e in events]))
        .values(batch_id=batch_id)
    )
    session.execute(
        update(ALERT_GROUPS).where(*_is_group(key)).values(state="firing", last_notified_at=now)
    )
    return True


def due_group_keys(session: Session, context: AlertContext, now: float) -> list[GroupKey]:
    """The groups with settled pending events that may be notified now: not firing, or
    last notified a group window ago or longer. One read of the pending events' partial
    index; ``notify_group_if_due`` decides again with the group locked."""
    events, groups = ALERT_EVENTS.c, ALERT_GROUPS.c
    pending = (
        select(events.rule, events.agent, events.tool)
        .where(events.batch_id.is_(None), events.created_at <= now - context.settle_s)
        .group_by(events.rule, events.agent, events.tool)
        .subquery()
    )
    quiet_since = now - context.config.group_window_s
    due = (
        select(pending.c.rule, pending.c.agent, pending.c.tool)
        .join(
            ALERT_GROUPS,
            and_(
                groups.rule == pending.c.rule,
                groups.agent == pending.c.agent,
                groups.tool == pending.c.tool,
            ),
        )
        .where(
            or_(
                groups.state != "firing",
                groups.last_notified_at.is_(None),
                groups.last_notified_at <= quiet_since,
            )
        )
        .order_by(pending.c.rule, pending.c.agent, pending.c.tool)
    )
    return [(row[0], row[1], row[2]) for row in session.execute(due)]


def flush_due_groups(engine: Engine, context: AlertContext, now: float) -> int:
    """Notify the pending events of every group whose window has passed. A tick while
    every group with pending events was notified within its window is one read."""
    with Session(engine) as session:
        keys = due_group_keys(session, context, now)
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
            group = locked_group(session, key)
            if group is None or group.state != "firing" or group.last_event_at > cutoff:
                continue
            _enqueue(
                session, key, "resolved", group.severity, [], group.last_event_at, context, now
            )
            session.execute(update(ALERT_GROUPS).where(*_is_group(key)).values(state="resolved"))
            resolved += 1
    return resolved
