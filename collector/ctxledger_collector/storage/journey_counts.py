"""Keeping the journey counters (``journey_counts``, ``run_journey_counts``) in step with
the reports, inside the ingest transaction that writes them.

When reports are replaced, the store passes what it read of the stored ones (their
state before) and the rows it writes (after); every stored report it read is either
rewritten or deleted. The counters move by the difference: ``-1`` journey (and its lost
items and tokens) in the bucket, agent, tool and verdict of each old state, ``+1`` in
those of each new one. Unchanged journeys cancel out, so a batch writes only the
counters it changed.

A lost result counts once, at its first lost journey (``reports.first_lost``): the
counters' ``lost_results``, ``result_lost_items`` and ``result_lost_tokens`` move with
that flag. A journey whose flag alone changes (another journey of its call became the
first lost) is passed as replaced and written too (:mod:`lost_results`).

Deltas are added, never set (``ON CONFLICT DO UPDATE SET n = n + excluded.n``), so
collectors on one PostgreSQL database can move the same counter at once: each
statement's row lock makes the additions take turns, whatever the transactions'
order, and the rows are written in one statement in key order, so two transactions
never wait on each other's rows in opposite orders. On SQLite writers take turns anyway.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from ctxledger_collector.storage.rows import REPORT_COLUMNS
from ctxledger_collector.storage.statements import ARRAY_MARK
from ctxledger_collector.storage.tables import FIRST_LOST_CONDITION

#: Bucket widths in seconds, finest first: a minute, an hour, a day.
GRAINS = (60, 3600, 86_400)

#: What the store reads of the reports it replaces: the key, then the columns the
#: counters are kept by.
COUNTED_COLUMNS = (
    "run_id",
    "tool_call_id",
    "request_key",
    "verdict",
    "lost_tokens",
    "agent_name",
    "tool_name",
    "last_observed_at",
    "lost_items",
    "step",
    "first_lost",
    "lost_tokens_unknown",
    "layer",
)
#: Where each counted column sits in a ``COUNTED_COLUMNS`` row and a ``REPORT_COLUMNS`` row.
COUNTED_AT = {name: COUNTED_COLUMNS.index(name) for name in COUNTED_COLUMNS}
REPORT_AT = {name: REPORT_COLUMNS.index(name) for name in COUNTED_COLUMNS}

#: ``layer`` is the report's layer sentence (``""`` for none), as ``reports.layer`` holds it.
JOURNEY_KEY = ("grain", "bucket", "agent_name", "tool_name", "verdict", "layer")
JOURNEY_SUMS = (
    "journeys",
    "lost_items",
    "lost_tokens",
    "lost_results",
    "result_lost_items",
    "result_lost_tokens",
    "tokens_unknown",
    "result_tokens_unknown",
)
RUN_KEY = ("run_id", "agent_name", "verdict", "layer")
RUN_SUMS = ("journeys", "lost_results")

Row = Sequence[Any]


def bucket_of(moment: float, grain: int) -> int:
    """The start of the ``grain``-second bucket holding ``moment``: the multiple of
    ``grain`` with bucket <= moment < bucket + grain, exactly (a float quotient can
    round across a bucket edge; the comparisons of int and float are exact)."""
    bucket = math.floor(moment / grain) * grain
    if bucket > moment:
        return bucket - grain
    if bucket + grain <= moment:
        return bucket + grain
    return bucket


def _name(value: str | None) -> str:
    return value or ""


#: Rows with where their counted columns sit, and whether they count -1 or +1.
Moves = Sequence[tuple[int, Iterable[Row], dict[str, int]]]


def journey_deltas(
    moves: Moves,
) -> tuple[dict[tuple[Any, ...], list[int]], dict[tuple[Any, ...], list[int]]]:
    """How the counters move: per counter key, ``JOURNEY_SUMS``; per run key,
    ``RUN_SUMS``. Each move is (sign, rows, where their columns sit). Keys whose changes
    cancel out are left out."""
    journeys: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * len(JOURNEY_SUMS))
    runs: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for sign, rows, at in moves:
        for row in rows:
            agent, tool, verdict, layer = (
                _name(row[at["agent_name"]]),
                _name(row[at["tool_name"]]),
                row[at["verdict"]],
                _name(row[at["layer"]]),
            )
            moment = row[at["last_observed_at"]]
            items, tokens = sign * row[at["lost_items"]], sign * row[at["lost_tokens"]]
            first = bool(row[at["first_lost"]])
            unknown = sign if row[at["lost_tokens_unknown"]] is not None else 0
            for grain in GRAINS:
                sums = journeys[(grain, bucket_of(moment, grain), agent, tool, verdict, layer)]
                sums[0] += sign
                sums[1] += items
                sums[2] += tokens
                sums[6] += unknown
                if first:
                    sums[3] += sign
                    sums[4] += items
                    sums[5] += tokens
                    sums[7] += unknown
            counts = runs[(row[at["run_id"]], agent, verdict, layer)]
            counts[0] += sign
            counts[1] += sign if first else 0
    return (
        {key: sums for key, sums in journeys.items() if any(sums)},
        {key: counts for key, counts in runs.items() if any(counts)},
    )


def _add(
    connection: Connection,
    table: str,
    key: Sequence[str],
    sums: Sequence[str],
    rows: list[tuple[Any, ...]],
) -> None:
    if not rows:
        return
    rows.sort()
    columns = [*key, *sums]
    names = ", ".join(columns)
    added = ", ".join(f"{s} = {table}.{s} + excluded.{s}" for s in sums)
    conflict = f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {added}"
    if connection.dialect.name == "postgresql":
        types = [
            "int8" if c not in ("agent_name", "tool_name", "verdict", "layer") else "text"
            for c in columns
        ]
        arrays = ", ".join(f"{ARRAY_MARK}::{t}[]" for t in types)
        sql = (
            f"INSERT INTO {table} ({names}) SELECT {names} FROM unnest({arrays}) "
            f"WITH ORDINALITY AS d({names}, n) ORDER BY n {conflict}"
        )
        connection.exec_driver_sql(sql, tuple(list(c) for c in zip(*rows, strict=True)))
    else:
        marks = ", ".join("?" * len(columns))
        sql = f"INSERT INTO {table} ({names}) VALUES ({marks}) {conflict}"
        connection.exec_driver_sql(sql, rows)


def count_journeys(
    connection: Connection,
    replaced: Sequence[Row],
    written: Sequence[Row],
    reflagged: Sequence[tuple[Row, Row]] = (),
) -> None:
    """Move the counters from the ``replaced`` reports' state (``COUNTED_COLUMNS`` rows
    of every stored report the transaction rewrites or deletes) to the ``written``
    reports' (``REPORT_COLUMNS`` rows); ``reflagged`` holds (before, after) states
    (``COUNTED_COLUMNS``) of stored reports whose ``first_lost`` alone changed."""
    journeys, runs = journey_deltas(
        (
            (-1, replaced, COUNTED_AT),
            (1, written, REPORT_AT),
            (-1, [before for before, _ in reflagged], COUNTED_AT),
            (1, [after for _, after in reflagged], COUNTED_AT),
        )
    )
    _add(
        connection,
        "journey_counts",
        JOURNEY_KEY,
        JOURNEY_SUMS,
        [(*k, *v) for k, v in journeys.items()],
    )
    _add(connection, "run_journey_counts", RUN_KEY, RUN_SUMS, [(*k, *v) for k, v in runs.items()])


def _bucket_sql(moment: str, grain: int) -> str:
    """SQL for :func:`bucket_of` (the migration that added the counters has a copy)."""
    rough = f"CAST({moment} / {grain} AS BIGINT) * {grain}"
    return (
        f"CASE WHEN {rough} > {moment} THEN {rough} - {grain} "
        f"WHEN {rough} + {grain} <= {moment} THEN {rough} + {grain} ELSE {rough} END"
    )


def _first(value: str) -> str:
    """The sum of ``value`` over the first lost journeys of a group."""
    return f"sum(CASE WHEN {FIRST_LOST_CONDITION} THEN {value} ELSE 0 END)"


_UNKNOWN = "CASE WHEN lost_tokens_unknown IS NULL THEN 0 ELSE 1 END"
_UNKNOWN_SUM = f"sum({_UNKNOWN})"


def _counted(source: str, grain: int, sign: int) -> str:
    """The journey counters of the reports in ``source`` at one grain, times ``sign``,
    as a SELECT of ``JOURNEY_KEY`` and ``JOURNEY_SUMS``."""
    bucket = _bucket_sql("last_observed_at", grain)
    sums = (
        "count(*)",
        "sum(lost_items)",
        "sum(lost_tokens)",
        _first("1"),
        _first("lost_items"),
        _first("lost_tokens"),
        _UNKNOWN_SUM,
        _first(_UNKNOWN),
    )
    names = "coalesce(agent_name, ''), coalesce(tool_name, ''), verdict, coalesce(layer, '')"
    return (
        f"SELECT {grain}, {bucket}, {names}, "
        f"{', '.join(f'{sign} * {total}' for total in sums)} FROM {source} "
        f"GROUP BY {bucket}, {names}"
    )


def uncount_reports(connection: Connection, source: str) -> None:
    """Take every report of the table ``source`` (a partition of ``reports``) out of the
    journey counters, in the database: what retention does before it empties the
    partition. The runs' own counters go with their rows."""
    columns = ", ".join((*JOURNEY_KEY, *JOURNEY_SUMS))
    added = ", ".join(f"{s} = journey_counts.{s} + excluded.{s}" for s in JOURNEY_SUMS)
    for grain in GRAINS:
        connection.exec_driver_sql(
            f"INSERT INTO journey_counts ({columns}) {_counted(source, grain, -1)} "
            f"ON CONFLICT ({', '.join(JOURNEY_KEY)}) DO UPDATE SET {added}"
        )


def rebuild_counts(connection: Connection) -> None:
    """Recount every counter from the stored reports (what migration 0004 does once;
    for databases filled without the collector, and for checking the counters)."""
    connection.exec_driver_sql("DELETE FROM journey_counts")
    connection.exec_driver_sql("DELETE FROM run_journey_counts")
    for grain in GRAINS:
        connection.exec_driver_sql(
            f"INSERT INTO journey_counts ({', '.join((*JOURNEY_KEY, *JOURNEY_SUMS))}) "
            f"{_counted('reports', grain, 1)}"
        )
    names = "coalesce(agent_name, ''), verdict, coalesce(layer, '')"
    connection.exec_driver_sql(
        f"INSERT INTO run_journey_counts ({', '.join((*RUN_KEY, *RUN_SUMS))}) "
        f"SELECT run_id, {names}, count(*), {_first('1')} FROM reports "
        f"GROUP BY run_id, {names}"
    )
