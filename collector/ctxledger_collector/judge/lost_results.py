"""Which journey of each lost result is where it was first lost (``reports.first_lost``),
kept in the ingest transaction that rewrites the reports.

A lost result is one tool call in one run with a losing journey; its first lost journey
is the losing one earliest in :func:`ctxledger.verdicts.sent_order`, its other losing
journeys are the result *still missing*. The flag is a function of a call's reports
alone, and a batch rewrites only some of them (the journeys it *considered*). The flagged
journey of each touched call is read by the partial index ``ix_reports_first_lost``;
an untouched losing journey sits no earlier than it, so the new first lost journey is the
earliest of the rewritten losing journeys and the flagged one when it was not rewritten.
Only when the flagged journey is rewritten as no longer losing (or later than it was) are
the call's losing reports read, to find the next. A stored report whose flag alone
changes is updated in place and handed to the counters as (before, after).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from ctxledger.verdicts import LOSING_VERDICTS, sent_order
from ctxledger_collector.storage.journey_counts import COUNTED_AT, COUNTED_COLUMNS, REPORT_AT
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import FIRST_LOST_CONDITION

Row = Sequence[Any]
#: (run id, tool call id, request key)
Key = tuple[int, str, str]
Call = tuple[int, str]

_LOSING = ", ".join(f"'{verdict}'" for verdict in LOSING_VERDICTS)
_FLAG = REPORT_AT["first_lost"]


@dataclass
class FirstLosses:
    """The written rows with their flags set, and what else changed."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    #: (before, after) ``COUNTED_COLUMNS`` states of stored reports whose flag alone changed.
    reflagged: list[tuple[Row, Row]] = field(default_factory=list)
    #: Journeys written or reflagged that are losing but not where their result was first lost.
    still_missing: set[Key] = field(default_factory=set)
    #: Stored journeys, not rewritten, that are now where their result was first lost
    #: (the earlier one was re-judged as no loss): the judge re-judges them so that they
    #: raise the alert the result now owes.
    became_first: set[Key] = field(default_factory=set)


def _key(row: Row, at: dict[str, int]) -> Key:
    return (row[at["run_id"]], row[at["tool_call_id"]], row[at["request_key"]])


def _order(row: Row, at: dict[str, int]) -> tuple[bool, int, str]:
    return sent_order(row[at["step"]], row[at["request_key"]])


def _losing(row: Row, at: dict[str, int]) -> bool:
    return row[at["verdict"]] in LOSING_VERDICTS


def _select(sql: Statements, index: str | None, join: str, where: str = "") -> str:
    columns = ", ".join(f"t.{c}" for c in COUNTED_COLUMNS)
    indexed = f"INDEXED BY {index} " if index and not sql.postgres else ""
    return (
        f"SELECT {columns} FROM v {sql.join_keys} reports t {indexed}"
        f"ON t.run_id = v.run_id AND t.tool_call_id = v.tool_call_id{join} {where}"
    )


def _per_call(connection: Connection, sql: Statements, calls: Collection[Call], query: str) -> Any:
    return sql.per_key(
        connection, ("run_id", "tool_call_id"), sorted(calls), query, ("tool_call_id",)
    )


def mark_first_losses(
    connection: Connection,
    sql: Statements,
    considered: Collection[Key],
    written: Sequence[tuple[Any, ...]],
) -> FirstLosses:
    """Set ``first_lost`` on the ``written`` rows (``REPORT_COLUMNS``) of the journeys
    ``considered`` (every stored one of them is rewritten or deleted), before they are
    written; update the flag of the stored reports it moves from or to."""
    calls = {(run_id, call_id) for run_id, call_id, _ in considered}
    flagged_query = _select(sql, "ix_reports_first_lost", f" AND t.{FIRST_LOST_CONDITION}")
    flagged = {(row[0], row[1]): row for row in _per_call(connection, sql, calls, flagged_query)}
    candidates: dict[Call, list[tuple[tuple[bool, int, str], Key, Row | None]]] = defaultdict(list)
    new_orders: dict[Key, tuple[bool, int, str]] = {}
    for row in written:
        if _losing(row, REPORT_AT):
            key = _key(row, REPORT_AT)
            new_orders[key] = _order(row, REPORT_AT)
            candidates[key[:2]].append((new_orders[key], key, None))
    rescan: set[Call] = set()
    for call, row in flagged.items():
        key = _key(row, COUNTED_AT)
        if key not in considered:
            candidates[call].append((_order(row, COUNTED_AT), key, row))
        elif key not in new_orders or new_orders[key] > _order(row, COUNTED_AT):
            rescan.add(call)
    if rescan:
        losing = _select(sql, None, "", f"WHERE t.verdict IN ({_LOSING})")
        for row in _per_call(connection, sql, rescan, losing):
            key = _key(row, COUNTED_AT)
            if key not in considered:
                candidates[key[:2]].append((_order(row, COUNTED_AT), key, row))
    firsts = {call: min(found, key=lambda c: c[:2]) for call, found in candidates.items()}
    first_keys = {first[1] for first in firsts.values()}

    outcome = FirstLosses()
    for row in written:
        key = _key(row, REPORT_AT)
        first = key in first_keys
        outcome.rows.append((*row[:_FLAG], first, *row[_FLAG + 1 :]))
        if key in new_orders and not first:
            outcome.still_missing.add(key)
    flag = COUNTED_AT["first_lost"]
    for old in flagged.values():  # the old first lost journey, no longer first
        key = _key(old, COUNTED_AT)
        if key not in considered and key not in first_keys:
            outcome.reflagged.append((old, (*old[:flag], False, *old[flag + 1 :])))
            outcome.still_missing.add(key)
    for _, _, stored in firsts.values():  # a stored journey that becomes the first lost
        if stored is not None and not stored[flag]:
            outcome.reflagged.append((stored, (*stored[:flag], True, *stored[flag + 1 :])))
            outcome.became_first.add(_key(stored, COUNTED_AT))
    if outcome.reflagged:
        mark = sql.mark
        connection.exec_driver_sql(
            f"UPDATE reports SET first_lost = {mark} "
            f"WHERE run_id = {mark} AND tool_call_id = {mark} AND request_key = {mark}",
            [(after[flag], *_key(after, COUNTED_AT)) for _, after in outcome.reflagged],
        )
    return outcome
