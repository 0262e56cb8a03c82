"""The rows structured preservation has kept so far and why, the note that sums them
up, and a cheap way to tell whether one more row still fits a token budget."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ctxledger.remedies.budget import Budget
from ctxledger.remedies.row_document import dumps


@dataclass(frozen=True)
class Selection:
    """Kept rows: positions in original order, the reason for each, how many each reason
    kept, and the order they were added in."""

    indices: tuple[int, ...] = ()
    reasons: Mapping[int, str] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    order: tuple[int, ...] = ()

    def plus(self, index: int, reason: str) -> Selection:
        indices = list(self.indices)
        bisect.insort(indices, index)
        counts = dict(self.counts)
        counts[reason] = counts.get(reason, 0) + 1
        return Selection(
            tuple(indices), {**self.reasons, index: reason}, counts, (*self.order, index)
        )

    def minus(self, index: int) -> Selection:
        reason = self.reasons[index]
        counts = dict(self.counts)
        counts[reason] -= 1
        if not counts[reason]:
            del counts[reason]
        reasons = {i: r for i, r in self.reasons.items() if i != index}
        return Selection(
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
    return note_from_counts(total, counts, must_keep)


def note_from_counts(total: int, counts: Mapping[str, int], must_keep: int) -> str:
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


class TokenTracker:
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
        before: Selection,
        after: Selection,
        noted: bool,
        total: int,
        must_keep: int,
    ) -> int:
        tokens = self.budget.tokens_of
        change = self.cost[index]
        change += tokens(str(len(after.indices))) - tokens(str(len(before.indices)))
        if noted:
            change += tokens(note_from_counts(total, after.counts, must_keep))
            change -= tokens(note_from_counts(total, before.counts, must_keep))
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
