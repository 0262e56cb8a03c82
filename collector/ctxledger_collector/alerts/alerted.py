"""Which results a rule has already alerted: a lost result alerts a rule once, whichever
of its journeys (requests) looked lost first and whichever replica judged it.

``record_events`` drops the events of results already notified as it writes them; two
replicas judging one trace at once can both miss each other's, so the group's
notification, taken with the group row locked, decides again (``superseded_events``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from ctxledger_collector.storage.alert_tables import ALERT_EVENTS
from ctxledger_collector.storage.statements import Statements

ResultKey = tuple[str, str, str]  # rule, trace id, tool call id


def stored_events(
    session: Session,
    columns: Sequence[str],
    key: Sequence[str],
    keys: Sequence[tuple[str, ...]],
    index: str,
) -> list[Sequence[Any]]:
    """``columns`` of the stored events whose ``key`` is one of ``keys``: one statement
    joining the keys to ``index``, as ingest reads its own rows."""
    connection = session.connection()
    return Statements(connection.dialect.name).select_keys(
        connection, ALERT_EVENTS, columns, key, keys, index=index
    )


def notified_results(session: Session, results: Iterable[ResultKey]) -> set[ResultKey]:
    """Which of the (rule, trace, call) results already have a notified event."""
    rows = stored_events(
        session,
        ("rule", "trace_id", "tool_call_id", "batch_id"),
        ("rule", "trace_id", "tool_call_id"),
        sorted(set(results)),
        "ix_alert_events_journey",
    )
    return {(rule, trace_id, call_id) for rule, trace_id, call_id, batch_id in rows if batch_id}


def _result_of(event: dict[str, Any]) -> ResultKey:
    return (event["rule"], event["trace_id"], event["tool_call_id"])


def _earliest_first(event: dict[str, Any]) -> tuple[bool, int, float, int]:
    step = event["step"]
    return (step is None, step or 0, event["observed_at"], event["id"])


def superseded_events(session: Session, pending: Sequence[dict[str, Any]]) -> set[int]:
    """The ids of the ``pending`` events (of one group, its row locked) whose result is
    already alerted: notified at another journey, or pending at an earlier one (the
    earliest step first, then the earliest observed)."""
    by_result: dict[ResultKey, list[dict[str, Any]]] = {}
    for event in pending:
        by_result.setdefault(_result_of(event), []).append(event)
    notified = notified_results(session, by_result)
    superseded: set[int] = set()
    for result, events in by_result.items():
        ranked = sorted(events, key=_earliest_first)
        kept = [] if result in notified else ranked[:1]
        superseded.update(e["id"] for e in ranked if e not in kept)
    return superseded
