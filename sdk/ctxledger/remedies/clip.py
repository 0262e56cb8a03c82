"""Head + tail clipping of text (seed 002): whole lines where possible, whole grapheme
clusters always, and a visible marker that states the total, what was omitted and how
to get more. The marker's own size counts against the budget; logs keep their tail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ctxledger._safety import raise_errors, report_failure
from ctxledger._serialize import to_text
from ctxledger.remedies.budget import Budget, Declaration, as_budget, declaration
from ctxledger.remedies.fitting import fit_head_and_tail
from ctxledger.remedies.graphemes import boundary_at_or_before, grapheme_boundaries

DEFAULT_HOW_TO_GET_MORE = "ask for a narrower range (offset/pattern)"
STRATEGY = "head_tail"


@dataclass(frozen=True)
class Clipped:
    """A clipped text and what it lost. Ranges are 1-based and inclusive."""

    text: str
    clipped: bool
    total_lines: int
    total_chars: int
    kept_lines: int
    """Lines shown in full."""
    kept_chars: int
    """Code points of the original shown (the marker not included)."""
    omitted_lines: tuple[int, int] | None
    """First and last line not shown in full."""
    omitted_chars: tuple[int, int] | None
    """First and last code point omitted."""
    unit: Literal["lines", "chars"]
    """Whether whole lines or grapheme clusters were kept."""
    marker: str = ""
    fits: bool = True
    """False only when the budget cannot hold even the smallest marker."""
    strategy: str = STRATEGY

    def declaration(self) -> Declaration:
        """Keyword arguments for :func:`ctxledger.measure` declaring this clip."""
        return declaration(self.clipped, self.strategy, marker=bool(self.marker))


def as_text(value: Any) -> str:
    """Any value as text (see :func:`ctxledger._serialize.to_text`), never raising."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return to_text(value)
    except Exception:  # circular structures, hostile __str__ ...
        try:
            return repr(value)
        except Exception:
            return object.__repr__(value)


def count_lines(text: str) -> int:
    """Lines as ``\\n`` separates them; a final line without ``\\n`` counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _n(value: int) -> str:
    return f"{value:,}"


def _plural(value: int, word: str) -> str:
    return f"{_n(value)} {word}" + ("" if value == 1 else "s")


class _Clipper:
    """One clip of one text; renders candidates and fits them."""

    def __init__(self, text: str, budget: Budget, head_share: float, how_to_get_more: str) -> None:
        self.text = text
        self.budget = budget
        self.head_share = head_share
        self.more = how_to_get_more
        self.total_chars = len(text)
        self.total_lines = count_lines(text)

    # -- markers ------------------------------------------------------------------
    def marker(self, level: int, start: int, end: int, unit: str) -> str:
        """The marker for omitting code points ``[start, end)``; ``level`` 0 is the
        full marker, higher levels are shorter, 3 is none at all."""
        text = self.text
        omitted = end - start
        if level == 0:
            if unit == "lines":
                first = text.count("\n", 0, start) + 1
                last = first + text.count("\n", start, end) - (1 if text[end - 1] == "\n" else 0)
                what = (
                    f"omitted lines {_n(first)}–{_n(last)} "
                    f"({_plural(last - first + 1, 'line')}, {_plural(omitted, 'char')})"
                )
            else:
                what = f"omitted chars {_n(start + 1)}–{_n(end)} ({_plural(omitted, 'char')})"
            return (
                f"…[ctxledger: clipped — {_plural(self.total_lines, 'line')}, "
                f"{_plural(self.total_chars, 'char')} in total; {what}; {self.more}]…"
            )
        if level == 1:
            return (
                f"…[ctxledger: clipped — {_n(self.total_chars)} chars in total, "
                f"{_n(omitted)} omitted]…"
            )
        if level == 2:
            return "[ctxledger: clipped]"
        return ""

    def render(self, head_end: int, tail_start: int, level: int, unit: str) -> str:
        head, tail = self.text[:head_end], self.text[tail_start:]
        marker = self.marker(level, head_end, tail_start, unit)
        before = "" if not head or head.endswith("\n") or not marker else "\n"
        after = "\n" if tail and marker else ""
        return f"{head}{before}{marker}{after}{tail}"

    # -- candidates -----------------------------------------------------------------
    def line_units(self) -> tuple[list[int], list[int]]:
        text = self.text
        ends = [0]
        at = text.find("\n")
        while at != -1:
            ends.append(at + 1)
            at = text.find("\n", at + 1)
        heads = [e for e in ends if e < len(text)]
        tails = [len(text), *reversed(heads[1:])]
        return heads, tails

    def grapheme_units(self, window: int) -> tuple[list[int], list[int]]:
        text = self.text
        if window >= len(text):
            bounds = grapheme_boundaries(text)
            return bounds, bounds[::-1]
        heads = grapheme_boundaries(text, 0, window)
        start = boundary_at_or_before(text, len(text) - window)
        tails = grapheme_boundaries(text, start)[::-1]
        return heads, tails

    # -- fitting --------------------------------------------------------------------
    def fit(self, heads: list[int], tails: list[int], unit: str) -> tuple[int, int, int] | None:
        """(head end, tail start, marker level) of the best fitting rendering."""
        for level in range(4):
            found = self.fit_level(heads, tails, unit, level)
            if found is not None:
                return found[0], found[1], level
        return None

    def fit_level(
        self, heads: list[int], tails: list[int], unit: str, level: int
    ) -> tuple[int, int] | None:
        reserve = self.render(0, len(self.text), level, unit)
        head_budget = self.budget.scaled(self.head_share, reserve)
        found = fit_head_and_tail(
            heads,
            tails,
            lambda i, j: self.budget.fits(self.render(heads[i], tails[j], level, unit)),
            lambda i: head_budget.fits(self.text[: heads[i]]),
        )
        return None if found is None else (heads[found[0]], tails[found[1]])

    def clip(self, by: str) -> Clipped:
        text = self.text
        if by == "lines" and self.total_lines > 1:
            heads, tails = self.line_units()
            found = self.fit(heads, tails, "lines")
            if found is not None:
                head_end, tail_start, level = found
                nothing = head_end == 0 and tail_start == len(text)
                no_tail = tail_start == len(text) and self.head_share < 1
                if level < 3 and not nothing and not no_tail:
                    return self.result(head_end, tail_start, level, "lines")
        # Clusters are segmented only near both ends: a window as long as the budget
        # can be (tokens span several chars, so the window grows when it is filled).
        window = 64 + (self.budget.chars or 0)
        if self.budget.tokens is not None:
            window = max(window, self.budget.tokens * 8 + 64)
        while True:
            heads, tails = self.grapheme_units(window)
            found = self.fit(heads, tails, "chars")
            if found is None:
                return self.result(0, len(text), 3, "chars", fits=False)
            head_end, tail_start, level = found
            exhausted = (head_end == heads[-1] and heads[-1] < len(text)) or (
                tail_start == tails[-1] and tails[-1] > 0
            )
            if not exhausted or window >= len(text):
                return self.result(head_end, tail_start, level, "chars")
            window *= 4

    def result(
        self,
        head_end: int,
        tail_start: int,
        level: int,
        unit: Literal["lines", "chars"],
        *,
        fits: bool = True,
    ) -> Clipped:
        text = self.text
        head_full = text.count("\n", 0, head_end)
        at_line_start = tail_start == 0 or text[tail_start - 1] == "\n"
        first_full = text.count("\n", 0, tail_start) + (0 if at_line_start else 1)
        tail_full = max(0, self.total_lines - first_full)
        if tail_start >= len(text):
            tail_full = 0
        marker = self.marker(level, head_end, tail_start, unit)
        return Clipped(
            text=self.render(head_end, tail_start, level, unit),
            clipped=True,
            total_lines=self.total_lines,
            total_chars=self.total_chars,
            kept_lines=head_full + tail_full,
            kept_chars=head_end + len(text) - tail_start,
            omitted_lines=(head_full + 1, self.total_lines - tail_full),
            omitted_chars=(head_end + 1, tail_start),
            unit=unit,
            marker=marker,
            fits=fits,
        )


def render_clip(
    text: str,
    head_end: int,
    tail_start: int,
    *,
    unit: Literal["lines", "chars"] = "lines",
    how_to_get_more: str | None = None,
) -> str:
    """The clip of ``text`` that keeps ``text[:head_end]`` and ``text[tail_start:]``
    with the full marker between them, exactly as :func:`clip_text` renders it."""
    more = how_to_get_more or DEFAULT_HOW_TO_GET_MORE
    return _Clipper(text, Budget(), 0.0, more).render(head_end, tail_start, 0, unit)


def _unchanged(text: str, unit: Literal["lines", "chars"], fits: bool = True) -> Clipped:
    lines = count_lines(text)
    return Clipped(
        text=text,
        clipped=False,
        total_lines=lines,
        total_chars=len(text),
        kept_lines=lines,
        kept_chars=len(text),
        omitted_lines=None,
        omitted_chars=None,
        unit=unit,
        fits=fits,
    )


def clip_text(
    text: Any,
    *,
    budget: Budget | int,
    head_share: float = 0.6,
    by: Literal["lines", "chars"] = "lines",
    how_to_get_more: str | None = None,
) -> Clipped:
    """Keep the head and the tail of ``text`` within ``budget``, with a visible marker
    between them saying what was omitted and ``how_to_get_more``.

    ``by="lines"`` keeps whole lines (falling back to grapheme clusters when a single
    huge line leaves nothing, or no tail, to keep); ``by="chars"`` keeps grapheme
    clusters. ``head_share`` of the budget (after the marker) goes to the head first;
    the tail takes the rest and whatever the head leaves unused. Never raises: any
    value is clipped as its text form.
    """
    value = as_text(text)
    unit: Literal["lines", "chars"] = "chars" if by == "chars" else "lines"
    try:
        limits = as_budget(budget)
        if limits.fits(value):
            return _unchanged(value, unit)
        try:
            share = min(1.0, max(0.0, float(head_share)))
        except (TypeError, ValueError):
            share = 0.6
        more = how_to_get_more if isinstance(how_to_get_more, str) and how_to_get_more else None
        return _Clipper(value, limits, share, more or DEFAULT_HOW_TO_GET_MORE).clip(unit)
    except Exception as error:
        if raise_errors():
            raise
        report_failure("clip_text", error)
        return _unchanged(value, unit, fits=False)
