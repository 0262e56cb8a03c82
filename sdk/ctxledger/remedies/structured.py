"""Structured preservation (seed 000): must-keep rows first (a configurable rule table),
then head and tail samples, fitted to a budget by rendering after every row added, and
saying which rule kept each row (``structured``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger._safety import raise_errors, report_failure
from ctxledger.remedies.budget import Budget, Declaration, as_budget, declaration
from ctxledger.remedies.clip import Clipped, clip_text
from ctxledger.remedies.keep_rules import DEFAULT_RULES, KeepRule
from ctxledger.remedies.row_document import Envelope, Path, dumps, load, locate_rows
from ctxledger.remedies.row_selection import Selection, TokenTracker, note_from_counts


@dataclass(frozen=True)
class StructuredKept:
    """Must-keep rows, then head and tail samples, that fit the budget."""

    text: str
    truncated: bool
    kept: int
    total: int
    kept_indices: tuple[int, ...]
    kept_by: Mapping[str, str]
    """Row id (or ``#<position>``, 1-based, without a unique id) → the rule name, or
    ``head``/``tail``, that kept it."""
    must_keep: int
    """Rows that matched a rule."""
    must_keep_kept: int
    must_keep_omitted: tuple[str, ...]
    """Ids of rows that matched a rule but did not fit."""
    path: Path | None
    fits: bool = True
    strategy: str = "structured"
    marker: bool = True

    def declaration(self) -> Declaration:
        return declaration(self.truncated, self.strategy, marker=self.marker)


def _structured_from_clip(clipped: Clipped) -> StructuredKept:
    return StructuredKept(
        text=clipped.text,
        truncated=clipped.clipped,
        kept=clipped.kept_lines,
        total=clipped.total_lines,
        kept_indices=(),
        kept_by={},
        must_keep=0,
        must_keep_kept=0,
        must_keep_omitted=(),
        path=None,
        fits=clipped.fits,
        strategy=clipped.strategy,
        marker=bool(clipped.marker),
    )


def _labels(rows: Sequence[Any], id_field: str) -> list[str]:
    """The name each row goes by in ``kept_by``: its id, else ``#<position>``."""
    raw: list[str | None] = []
    for row in rows:
        value = row.get(id_field) if isinstance(row, dict) else None
        raw.append(None if value is None or isinstance(value, (dict, list)) else str(value))
    counts: dict[str, int] = {}
    for name in raw:
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    return [
        name if name is not None and counts[name] == 1 else f"#{position + 1}"
        for position, name in enumerate(raw)
    ]


def _count(value: Any, default: int) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return default


def keep_structured(
    value_or_json_text: Any,
    *,
    budget: Budget | int,
    rules: Sequence[KeepRule] = DEFAULT_RULES,
    head: int = 5,
    tail: int = 3,
    id_field: str = "id",
    key: str | Sequence[str] | None = None,
) -> StructuredKept:
    """Seed 000's structured preservation: rows matching ``rules`` first (in rule
    order), then the first ``head`` and last ``tail`` rows, each added only while the
    serialised result stays within ``budget``; kept rows stay in their original order.
    The output is valid JSON with ``truncated``, ``kept``, ``total``, ``kept_by`` (row id
    → the rule, ``head`` or ``tail`` that kept it) and a ``note`` marker. Never raises."""
    limits = as_budget(budget)
    loaded = load(value_or_json_text)
    try:
        found = locate_rows(loaded.parsed, key) if loaded.ok else None
        if found is None:
            return _structured_from_clip(clip_text(loaded.text, budget=limits, by="lines"))
        rows, path = found
        for text in (loaded.text, dumps(loaded.parsed)):
            if limits.fits(text):
                everything = tuple(range(len(rows)))
                return StructuredKept(
                    text, False, len(rows), len(rows), everything, {}, 0, 0, (), path
                )
        picked = [r for r in rules if isinstance(r, KeepRule)] if rules is not None else []
        return _keep(
            loaded.parsed,
            rows,
            path,
            limits,
            picked,
            _count(head, 5),
            _count(tail, 3),
            id_field if isinstance(id_field, str) else "id",
        )
    except Exception as error:
        if raise_errors():
            raise
        report_failure("keep_structured", error)
        return StructuredKept(loaded.text, False, 0, 0, (), {}, 0, 0, (), None, fits=False)


def _keep(
    parsed: Any,
    rows: list[Any],
    path: Path,
    budget: Budget,
    rules: Sequence[KeepRule],
    head: int,
    tail: int,
    id_field: str,
) -> StructuredKept:
    total = len(rows)
    labels = _labels(rows, id_field)
    envelope = Envelope(parsed, path, rows)

    candidates: list[tuple[int, str]] = []
    seen: set[int] = set()
    for rule in rules:
        for index, row in enumerate(rows):
            if index not in seen and rule.matches(row):
                seen.add(index)
                candidates.append((index, rule.name))
    must_keep = len(candidates)
    for index in range(min(head, total)):
        if index not in seen:
            seen.add(index)
            candidates.append((index, "head"))
    for index in range(max(0, total - tail), total):
        if index not in seen:
            seen.add(index)
            candidates.append((index, "tail"))

    def render(selection: Selection, shape: int) -> str:
        kept_by = {labels[i]: selection.reasons[i] for i in selection.indices}
        fields: dict[str, Any] = {
            "truncated": True,
            "kept": len(selection.indices),
            "total": total,
        }
        if shape < 2:
            fields["note"] = note_from_counts(total, selection.counts, must_keep)
        return envelope.render(selection.indices, fields, kept_by=kept_by, minimal=shape > 0)

    # Shapes, largest first: the whole document with a note; only the rows with a note;
    # only the rows with the fields.
    shape = next((s for s in range(3) if budget.fits(render(Selection(), s))), None)
    if shape is None:
        text = render(Selection(), 2)
        return StructuredKept(text, True, 0, total, (), {}, must_keep, 0, (), path, fits=False)

    selection = Selection()
    current = render(selection, shape)
    tracker = (
        TokenTracker(budget, current, candidates, labels, envelope.row_json)
        if budget.tokens is not None
        else None
    )
    omitted: list[int] = []
    for index, reason in candidates:
        row_chars = len(envelope.row_json[index])
        if budget.chars is not None and len(current) + row_chars > budget.chars:
            fits = False  # the row alone is longer than what is left
        else:
            trial = selection.plus(index, reason)
            if tracker is None:
                text = render(trial, shape)
                fits = budget.fits(text)
            else:
                delta = tracker.delta(index, selection, trial, shape < 2, total, must_keep)
                fits, text = tracker.decide(delta, functools.partial(render, trial, shape))
            if fits:
                selection, current = trial, text
                continue
        if reason not in ("head", "tail"):
            omitted.append(index)
    while selection.order and not budget.fits(current):  # an estimate was wrong: back off
        last = selection.order[-1]
        if selection.reasons[last] not in ("head", "tail"):
            omitted.append(last)
        selection = selection.minus(last)
        current = render(selection, shape)

    kept_by = {labels[i]: selection.reasons[i] for i in selection.indices}
    return StructuredKept(
        text=current,
        truncated=True,
        kept=len(selection.indices),
        total=total,
        kept_indices=selection.indices,
        kept_by=kept_by,
        must_keep=must_keep,
        must_keep_kept=must_keep - len(omitted),
        must_keep_omitted=tuple(labels[i] for i in sorted(omitted)),
        path=path,
    )
