"""Row-based reduction of structured results (seed 000), fitted to a budget by
serialising the result after every row added — never a fixed row count that overshoots.

* :func:`clip_rows` keeps the first rows (``head_rows``).
* :func:`keep_structured` keeps must-keep rows first (a configurable rule table), then
  head and tail samples (``structured``), and says which rule kept each row.

Both always give valid JSON carrying ``truncated``, ``kept`` and ``total``; text that is
not JSON with a record list is clipped by lines instead (:func:`clip_text`).
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxledger._items import DEFAULT_ITEM_KEYS
from ctxledger._safety import raise_errors, report_failure
from ctxledger.remedies.budget import Budget, Declaration, as_budget, declaration
from ctxledger.remedies.clip import Clipped, as_text, clip_text, largest

Path = tuple[str, ...]


def dumps(value: Any) -> str:
    """The serialisation budgets are checked against: ``json.dumps`` without ASCII
    escaping and with the default separators."""
    return json.dumps(value, ensure_ascii=False)


# -- reading structured input -------------------------------------------------------
@dataclass(frozen=True)
class Loaded:
    """A tool result read as JSON: the parsed value and the text it came as (if any)."""

    parsed: Any
    text: str
    ok: bool


def load(value: Any) -> Loaded:
    """Parse text or bytes as JSON; any other value goes through its JSON text (see
    :func:`ctxledger._serialize.to_text`), so dataclasses and models become plain JSON."""
    text = as_text(value)
    try:
        return Loaded(json.loads(text), text, True)
    except (ValueError, RecursionError):
        return Loaded(None, text, False)


def _key_path(key: str | Sequence[str] | None) -> Path | None:
    if key is None:
        return None
    if isinstance(key, str):
        return (key,)
    try:
        return tuple(str(k) for k in key)
    except TypeError:
        return None


def locate_rows(
    parsed: Any, key: str | Sequence[str] | None = None, keys: Sequence[str] = DEFAULT_ITEM_KEYS
) -> tuple[list[Any], Path] | None:
    """The record list of a parsed value and the path to it: the value itself when it
    is a list (path ``()``), the list under ``key`` (a key or a path of keys), else the
    first list under one of ``keys`` at the top level or one level down (``hits.hits``).
    """
    if isinstance(parsed, list):
        return parsed, ()
    if not isinstance(parsed, dict):
        return None
    path = _key_path(key)
    if path:
        node: Any = parsed
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return (node, path) if isinstance(node, list) else None
    for name in keys:
        value = parsed.get(name)
        if isinstance(value, list):
            return value, (name,)
    for name in keys:
        value = parsed.get(name)
        if isinstance(value, dict):
            for inner in keys:
                if isinstance(value.get(inner), list):
                    return value[inner], (name, inner)
    return None


def _replace_at(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    copy = dict(doc)
    copy[path[0]] = _replace_at(doc[path[0]], path[1:], value)
    return copy


class Envelope:
    """Renders the reduced document fast: the document is serialised once per shape
    with placeholders, and the rows (serialised once each) are joined into it."""

    def __init__(self, parsed: Any, path: Path, rows: Sequence[Any]) -> None:
        self.parsed = parsed
        self.path = path
        self.row_json = [dumps(row) for row in rows]
        nonce = secrets.token_hex(8)
        self._rows_slot = f"\x00ctxledger-rows-{nonce}\x00"
        self._by_slot = f"\x00ctxledger-kept-by-{nonce}\x00"

    def render(
        self,
        indices: Sequence[int],
        fields: Mapping[str, Any],
        *,
        kept_by: Mapping[str, str] | None = None,
        minimal: bool = False,
        fields_first: bool = False,
    ) -> str:
        """The document with only the rows at ``indices`` and ``fields`` added at the
        top (a bare array, or ``minimal``, becomes ``{"items": [...], **fields}``, or
        ``{**fields, "items": [...]}`` with ``fields_first``)."""
        extra = dict(fields)
        if kept_by is not None:
            extra["kept_by"] = self._by_slot
        if not self.path or not isinstance(self.parsed, dict):
            if fields_first:
                return self._fill({**extra, "items": self._rows_slot}, indices, kept_by)
            doc: dict[str, Any] = {"items": self._rows_slot}
        elif minimal:
            doc = {}
            node = doc
            for part in self.path[:-1]:
                node[part] = {}
                node = node[part]
            node[self.path[-1]] = self._rows_slot
        else:
            doc = _replace_at(self.parsed, self.path, self._rows_slot)
        for name, value in extra.items():
            if name in doc and doc[name] != value and f"original_{name}" not in doc:
                doc[f"original_{name}"] = doc[name]  # keep the tool's own field visible
            doc[name] = value
        return self._fill(doc, indices, kept_by)

    def _fill(
        self, doc: dict[str, Any], indices: Sequence[int], kept_by: Mapping[str, str] | None
    ) -> str:
        shell = dumps(doc)
        rows = "[" + ", ".join(self.row_json[i] for i in indices) + "]"
        shell = shell.replace(dumps(self._rows_slot), rows, 1)
        if kept_by is not None:
            by = ", ".join(f"{dumps(k)}: {dumps(v)}" for k, v in kept_by.items())
            shell = shell.replace(dumps(self._by_slot), "{" + by + "}", 1)
        return shell


def _fallback_clip(text: str, budget: Budget) -> Clipped:
    return clip_text(text, budget=budget, by="lines")


# -- results ------------------------------------------------------------------------
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


def _unchanged_rows(text: str, rows: int, path: Path | None, fits: bool = True) -> RowsClipped:
    return RowsClipped(text, False, rows, rows, tuple(range(rows)), path, fits)


# -- head rows ----------------------------------------------------------------------
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
            return _rows_from_clip(_fallback_clip(loaded.text, limits))
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


# -- structured preservation ----------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, TypeError, ValueError):
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", "").replace("_", ""))
        except ValueError:
            return None
    return None


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, str) and isinstance(wanted, str):
        return value.strip().casefold() == wanted.casefold()
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted
    return bool(value == wanted)


def _field(row: Any, name: str) -> tuple[bool, Any]:
    if not isinstance(row, dict):
        return False, None
    if name in row:
        return True, row[name]
    node: Any = row
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


@dataclass(frozen=True)
class KeepRule:
    """Keep rows whose ``field`` matches every condition given: ``equals`` (a value or
    a tuple of values; strings compare case-insensitively), ``regex`` (searched in the
    value's text), ``min``/``max`` (numbers or numeric strings), ``non_empty``. With
    ``field="*"`` any field of the row may match. A rule with no condition matches a
    present, non-null field. ``field`` may be a dotted path (``error.code``)."""

    name: str
    field: str
    equals: Any = None
    regex: str | None = None
    min: float | None = None
    max: float | None = None
    non_empty: bool = False

    def matches(self, row: Any) -> bool:
        """Whether ``row`` matches; never raises (a failing check is no match)."""
        try:
            if self.field == "*":
                if isinstance(row, dict):
                    return any(self._test(v) for v in row.values())
                return self._test(row)
            present, value = _field(row, self.field)
            return present and self._test(value)
        except Exception:
            return False

    def _test(self, value: Any) -> bool:
        if self.equals is not None:
            options = (
                self.equals
                if isinstance(self.equals, (tuple, list, set, frozenset))
                else (self.equals,)
            )
            if not any(_same(value, option) for option in options):
                return False
        if self.regex is not None:
            pattern = _compiled(self.regex)
            if pattern is None or value is None:
                return False
            text = value if isinstance(value, str) else dumps(value)
            if not pattern.search(text):
                return False
        if self.min is not None or self.max is not None:
            number = _number(value)
            if number is None:
                return False
            if self.min is not None and number < self.min:
                return False
            if self.max is not None and number > self.max:
                return False
        if self.non_empty:
            if value is None or value in ("", [], {}):
                return False
            if isinstance(value, str) and not value.strip():
                return False
        return value is not None


#: Notes that ask for a second look (English and Chinese, as in the seeds' data).
SUSPICIOUS_NOTE = (
    r"(?i)\b(?:fraud\w*|suspicious|chargeback|disput\w*|complain\w*|urgent|escalat\w*|"
    r"manual review|do not ship|blacklist\w*|stolen)\b|欺诈|可疑|异常|投诉|争议|拒付|风控|"
    r"人工审核|加急"
)
#: Status values that mark a row as an anomaly.
ANOMALY_STATUSES = (
    "refunding",
    "refund_failed",
    "failed",
    "error",
    "rejected",
    "disputed",
    "chargeback",
    "timeout",
)

DEFAULT_RULES: tuple[KeepRule, ...] = (
    KeepRule("error_code", "error_code", non_empty=True),
    KeepRule("error", "error", non_empty=True),
    KeepRule("status", "status", equals=ANOMALY_STATUSES),
    KeepRule("amount>=10000", "amount", min=10_000),
    KeepRule("suspicious_note", "note", regex=SUSPICIOUS_NOTE),
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
            return _structured_from_clip(_fallback_clip(loaded.text, limits))
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


@dataclass(frozen=True)
class _Selection:
    """Kept rows: positions in original order, the reason for each, how many each reason
    kept, and the order they were added in."""

    indices: tuple[int, ...] = ()
    reasons: Mapping[int, str] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    order: tuple[int, ...] = ()

    def plus(self, index: int, reason: str) -> _Selection:
        indices = list(self.indices)
        bisect.insort(indices, index)
        counts = dict(self.counts)
        counts[reason] = counts.get(reason, 0) + 1
        return _Selection(
            tuple(indices), {**self.reasons, index: reason}, counts, (*self.order, index)
        )

    def minus(self, index: int) -> _Selection:
        reason = self.reasons[index]
        counts = dict(self.counts)
        counts[reason] -= 1
        if not counts[reason]:
            del counts[reason]
        reasons = {i: r for i, r in self.reasons.items() if i != index}
        return _Selection(
            tuple(i for i in self.indices if i != index),
            reasons,
            counts,
            tuple(i for i in self.order if i != index),
        )


def structured_note(total: int, reasons: Iterable[str], must_keep: int) -> str:
    """The ``note`` of :func:`keep_structured`: ``reasons`` has one entry per kept row
    (a rule name, ``head`` or ``tail``); ``must_keep`` rows matched a rule in all.

    Adding a row never shortens the note by more than the row adds, so the greedy
    selection's rejections stay valid for the final text."""
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return _note_from_counts(total, counts, must_keep)


def _note_from_counts(total: int, counts: Mapping[str, int], must_keep: int) -> str:
    kept = sum(counts.values())
    heads, tails = counts.get("head", 0), counts.get("tail", 0)
    by_rule = sorted((name, n) for name, n in counts.items() if name not in ("head", "tail"))
    rules = ", ".join(f"{name} {n:,}" for name, n in by_rule)
    return (
        f"[ctxledger: kept {kept:,} of {total:,} rows — must-keep "
        f"{kept - heads - tails:,} of {must_keep:,}"
        + (f" ({rules})" if rules else "")
        + f", head {heads:,}, tail {tails:,}; {total - kept:,} omitted; see kept_by; narrow "
        "the query (filters such as status or error_code) for the rest]"
    )


#: How far the token estimate of adding one row may be off: tokenizers split at ", "
#: between JSON elements, so a row costs what " <row>," costs, except at the ends of a
#: list (a seam or two) and where the note's numbers change.
_STEP_SLACK = 8
#: Recount exactly once the estimates accumulated this much uncertainty.
_RECOUNT_AFTER = 96


class _TokenTracker:
    """Decides whether a row fits a token budget, counting the whole text only when
    the estimate (the current exact count plus what the row adds) cannot tell."""

    def __init__(
        self,
        budget: Budget,
        current: str,
        candidates: Sequence[tuple[int, str]],
        labels: Sequence[str],
        row_json: Sequence[str],
    ) -> None:
        self.budget = budget
        self.limit = budget.tokens or 0
        rows = [f" {row_json[i]}," for i, _ in candidates]
        entries = [f" {dumps(labels[i])}: {dumps(reason)}," for i, reason in candidates]
        counts = budget.tokens_of_many(rows + entries)
        n = len(candidates)
        self.cost = {index: counts[k] + counts[n + k] for k, (index, _) in enumerate(candidates)}
        self.current = current
        self.base = budget.tokens_of(current)
        self.err = 0

    def delta(
        self,
        index: int,
        before: _Selection,
        after: _Selection,
        noted: bool,
        total: int,
        must_keep: int,
    ) -> int:
        tokens = self.budget.tokens_of
        change = self.cost[index]
        change += tokens(str(len(after.indices))) - tokens(str(len(before.indices)))
        if noted:
            change += tokens(_note_from_counts(total, after.counts, must_keep))
            change -= tokens(_note_from_counts(total, before.counts, must_keep))
        return change

    def decide(self, delta: int, render: Callable[[], str]) -> tuple[bool, str]:
        """Whether the candidate fits, and its text when it does."""
        if self.base + delta - self.err - _STEP_SLACK > self.limit:
            return False, ""
        text = render()
        if self.budget.chars is not None and len(text) > self.budget.chars:
            return False, ""
        if self.base + delta + self.err + _STEP_SLACK <= self.limit:
            self.base += delta
            self.err += _STEP_SLACK
            if self.err >= _RECOUNT_AFTER:
                self.base, self.err = self.budget.tokens_of(text), 0
            self.current = text
            return True, text
        exact = self.budget.tokens_of(text)
        if exact <= self.limit:
            self.base, self.err, self.current = exact, 0, text
            return True, text
        if self.err:
            self.base, self.err = self.budget.tokens_of(self.current), 0
        return False, ""


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

    def render(selection: _Selection, shape: int) -> str:
        kept_by = {labels[i]: selection.reasons[i] for i in selection.indices}
        fields: dict[str, Any] = {
            "truncated": True,
            "kept": len(selection.indices),
            "total": total,
        }
        if shape < 2:
            fields["note"] = _note_from_counts(total, selection.counts, must_keep)
        return envelope.render(selection.indices, fields, kept_by=kept_by, minimal=shape > 0)

    # Shapes, largest first: the whole document with a note; only the rows with a note;
    # only the rows with the fields.
    shape = next((s for s in range(3) if budget.fits(render(_Selection(), s))), None)
    if shape is None:
        text = render(_Selection(), 2)
        return StructuredKept(text, True, 0, total, (), {}, must_keep, 0, (), path, fits=False)

    selection = _Selection()
    current = render(selection, shape)
    tracker = (
        _TokenTracker(budget, current, candidates, labels, envelope.row_json)
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
