"""The log of rejected spans behind ``GET /api/v1/rejections``, kept ``max_age_s``.

Stock OTLP exporters ignore ``partial_success``, and its message names only a few spans,
so every rejection is also written here (one row per trace id and span id: a replayed
rejection updates its row instead of adding one) and counted by reason in ``/metrics``.
Rows are written after the chunk they belong to is stored and before the export is
answered. A row is deleted only once it is older than ``max_age_s`` (looked for at most
once a minute per process), so "span ids sent = stored ∪ listed" holds for that long,
however many spans are refused; a count bound (``keep``) is there only for who sets it.
A span refused while the spool replays an export acknowledged during an outage is written
the same way, marked ``replayed`` (its client was answered before the database saw it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.storage.rejection_table import REJECTIONS


def _fit(text: str | None, column: str) -> str | None:
    """A received value made storable: NUL (which PostgreSQL text refuses) shown as
    ``\\x00``, cut to the column's width (a cut never splits a code point)."""
    if text is None:
        return None
    width = getattr(REJECTIONS.c[column].type, "length", None)
    assert isinstance(width, int), f"rejections.{column} has no length"
    return text.replace("\x00", "\\x00")[:width]


def _row(rejection: Rejection, now: float, replayed: bool) -> dict[str, Any]:
    return {
        "trace_id": _fit(rejection.trace_id, "trace_id"),
        "span_id": _fit(rejection.span_id, "span_id"),
        "service_name": _fit(rejection.service_name, "service_name"),
        "reason": rejection.code,
        "detail": _fit(rejection.reason, "detail"),
        "rejected_at": now,
        "replayed": replayed,
    }


def _upsert(connection: Connection, rows: list[dict[str, Any]]) -> None:
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(REJECTIONS)
    changed = {
        name: statement.excluded[name]
        for name in ("service_name", "reason", "detail", "rejected_at", "replayed")
    }
    connection.execute(
        statement.on_conflict_do_update(index_elements=["trace_id", "span_id"], set_=changed),
        rows,
    )


def _prune(connection: Connection, keep: int) -> None:
    oldest_kept = (
        select(REJECTIONS.c.id).order_by(REJECTIONS.c.id.desc()).offset(keep - 1).limit(1)
    ).scalar_subquery()
    connection.execute(delete(REJECTIONS).where(REJECTIONS.c.id < oldest_kept))


#: How often the rows past their age are looked for (per process and database).
_AGE_PRUNE_EVERY_S = 60.0
_last_age_prune: dict[str, float] = {}


def _prune_by_age(connection: Connection, max_age_s: float, now: float) -> None:
    key = str(connection.engine.url)
    if now - _last_age_prune.get(key, float("-inf")) < _AGE_PRUNE_EVERY_S:
        return
    _last_age_prune[key] = now
    connection.execute(delete(REJECTIONS).where(REJECTIONS.c.rejected_at < now - max_age_s))


def record_rejections(
    engine: Engine,
    rejections: Sequence[Rejection],
    keep: int | None,
    now: float | None = None,
    replayed: bool = False,
    max_age_s: float | None = None,
) -> None:
    """Write the rejections (one transaction), deleting rows older than ``max_age_s``
    (and past the newest ``keep``, when a count bound is set; 0 lists none);
    ``replayed``: refused while a spooled export was replayed."""
    if not rejections or keep == 0:
        return
    stamp = time.time() if now is None else now
    unique = {(r.trace_id, r.span_id): r for r in rejections}  # one row per span
    rows = [_row(r, stamp, replayed) for r in unique.values()]
    # Rows whose cut ids collide would conflict twice in one statement.
    rows = list({(row["trace_id"], row["span_id"]): row for row in rows}.values())
    with engine.begin() as connection:
        _upsert(connection, rows)
        if keep is not None:
            _prune(connection, keep)
        if max_age_s is not None:
            _prune_by_age(connection, max_age_s, stamp)


@dataclass(frozen=True)
class RejectionPage:
    rows: list[dict[str, Any]]
    total: int
    next_before: int | None


def read_rejections(
    connection: Connection,
    limit: int,
    before: int | None = None,
    reason: str | None = None,
    trace_id: str | None = None,
) -> RejectionPage:
    """The newest rejections first; ``before`` is the cursor (an id) of the next page."""
    conditions: list[Any] = []
    if reason:
        conditions.append(REJECTIONS.c.reason == reason)
    if trace_id:
        conditions.append(REJECTIONS.c.trace_id == trace_id)
    total = connection.scalar(select(func.count()).select_from(REJECTIONS).where(*conditions))
    if before is not None:
        conditions.append(REJECTIONS.c.id < before)
    found = connection.execute(
        select(REJECTIONS).where(*conditions).order_by(REJECTIONS.c.id.desc()).limit(limit + 1)
    ).all()
    rows = [dict(row._mapping) for row in found[:limit]]
    next_before = rows[-1]["id"] if len(found) > limit else None
    return RejectionPage(rows, int(total or 0), next_before)


def reason_counts(rejections: Iterable[Rejection]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rejection in rejections:
        counts[rejection.code] = counts.get(rejection.code, 0) + 1
    return counts
