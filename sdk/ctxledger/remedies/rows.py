"""Row-based reduction of structured results (seed 000), fitted to a budget by
serialising the result after every row added — never a fixed row count that overshoots.

* :func:`clip_rows` keeps the first rows (``head_rows``).
* :func:`keep_structured` keeps must-keep rows first (a configurable rule table), then
  head and tail samples (``structured``), and says which rule kept each row; it lives
  in :mod:`ctxledger.remedies.structured` and is imported from here as well.

Both always give valid JSON carrying ``truncated``, ``kept`` and ``total``; text that is
not JSON with a record list is clipped by lines instead (:func:`clip_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger._safety import raise_errors, report_failure
from ctxledger.remedies.budget import Budget, Declaration, as_budget, declaration
from ctxledger.remedies.clip import Clipped, clip_text
from ctxledger.remedies.fitting import largest
from ctxledger.remedies.keep_rules import (
    ANOMALY_STATUSES,
    DEFAULT_RULES,
    SUSPICIOUS_NOTE,
    KeepRule,
)
from ctxledger.remedies.row_document import Envelope, Path, dumps, load, locate_rows
from ctxledger.remedies.row_selection import structured_note
from ctxledger.remedies.structured import StructuredKept, keep_structured

__all__ = [
    "ANOMALY_STATUSES",
    "DEFAULT_RULES",
    "SUSPICIOUS_NOTE",
    "KeepRule",
    "RowsClipped",
    "StructuredKept",
    "clip_rows",
    "keep_structured",
    "rows_note",
    "structured_note",
]


@dataclass(frozen=True)
class RowsClipped:
    """The first rows of a structured result that fit the budget."""

    text: str
    truncated: bool
    kept: int
    total: int
    kept_indices: tuple[int, ...]
    """0-based positions of the kept rows in the original list."""
    path: Path | None
    """Keys leading to the record list (``()`` for a bare array, None if none found)."""
    fits: bool = True
    """False only when the budget cannot hold even an empty envelope."""
    strategy: str = "head_rows"
    marker: bool = True

    def declaration(self) -> Declaration:
        return declaration(self.truncated, self.strategy, marker=self.marker)


def _rows_from_clip(clipped: Clipped) -> RowsClipped:
    return RowsClipped(
        text=clipped.text,
        truncated=clipped.clipped,
        kept=clipped.kept_lines,
        total=clipped.total_lines,
        kept_indices=(),
        path=None,
        fits=clipped.fits,
        strategy=clipped.strategy,
        marker=bool(clipped.marker),
    )


def _unchanged_rows(text: str, rows: int, path: Path | None, fits: bool = True) -> RowsClipped:
    return RowsClipped(text, False, rows, rows, tuple(range(rows)), path, fits)


def clip_rows(
    value_or_json_text: Any,
    *,
    budget: Budget | int,
    key: str | Sequence[str] | None = None,
) -> RowsClipped:
    """Keep the first rows of a structured result while its serialisation fits
    ``budget``; the output is valid JSON with ``truncated``, ``kept``, ``total`` and a
    ``note`` marker, the rows under the same key as in the input (a bare array becomes
    ``{"items": [...], ...}``). Never raises."""
    limits = as_budget(budget)
    loaded = load(value_or_json_text)
    try:
        found = locate_rows(loaded.parsed, key) if loaded.ok else None
        if found is None:
            return _rows_from_clip(clip_text(loaded.text, budget=limits, by="lines"))
        rows, path = found
        if limits.fits(loaded.text):
            return _unchanged_rows(loaded.text, len(rows), path)
        compact = dumps(loaded.parsed)
        if limits.fits(compact):
            return _unchanged_rows(compact, len(rows), path)
        return _clip_rows(loaded.parsed, rows, path, limits)
    except Exception as error:
        if raise_errors():
            raise
        report_failure("clip_rows", error)
        return _unchanged_rows(loaded.text, 0, None, fits=False)


def rows_note(kept: int, total: int) -> str:
    """The ``note`` of :func:`clip_rows` (a ``[ctxledger: kept …]`` marker)."""
    shown = f"rows 1–{kept:,}" if kept else "none fitted the budget"
    return (
        f"[ctxledger: kept {kept:,} of {total:,} rows ({shown}); {total - kept:,} omitted — "
        "narrow the query (filters, fewer fields) or page through the rest]"
    )


def _clip_rows(parsed: Any, rows: list[Any], path: Path, budget: Budget) -> RowsClipped:
    total = len(rows)
    envelope = Envelope(parsed, path, rows)

    def render(kept: int, shape: int) -> str:
        # Shapes, largest first: the whole document with a note; only the rows with a
        # note; only the rows with the three fields.
        fields: dict[str, Any] = {"truncated": True, "kept": kept, "total": total}
        if shape < 2:
            fields["note"] = rows_note(kept, total)
        return envelope.render(range(kept), fields, minimal=shape > 0)

    for shape in range(3):
        if budget.fits(render(0, shape)):
            kept = largest(0, total - 1, _fits_with(budget, render, shape))
            text = render(kept, shape)
            return RowsClipped(text, True, kept, total, tuple(range(kept)), path)
    return RowsClipped(render(0, 2), True, 0, total, (), path, fits=False)


def _fits_with(
    budget: Budget, render: Callable[[int, int], str], shape: int
) -> Callable[[int], bool]:
    return lambda kept: budget.fits(render(kept, shape))
