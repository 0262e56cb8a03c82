"""Grapheme cluster boundaries: where text may be cut without splitting a code point, an
emoji sequence or a combining sequence. The one segmentation every remedy uses."""

from __future__ import annotations

import importlib
from typing import Any

# ``regex`` ships with tiktoken; it has no type stubs, hence the dynamic import.
_regex: Any = importlib.import_module("regex")
_CLUSTER = _regex.compile(r"\X")
_CLUSTER_RUN = _regex.compile(r"\X{1,1024}")


def grapheme_boundaries(text: str, start: int = 0, stop: int | None = None) -> list[int]:
    """Grapheme cluster boundaries of ``text`` from ``start`` (itself a boundary) up to
    and including the first boundary at or beyond ``stop`` (default: the end)."""
    end = len(text) if stop is None else min(stop, len(text))
    bounds = [start]
    if start >= end:
        return bounds
    for match in _CLUSTER.finditer(text, start):
        bounds.append(match.end())
        if match.end() >= end:
            break
    return bounds


def _known_boundary(text: str, offset: int, reach: int = 4096) -> int:
    """A grapheme cluster boundary at or before ``offset``, found without segmenting
    from the start: after a line feed, or between two printable ASCII characters (both
    of break class Other, so nothing joins them)."""
    low = max(0, offset - reach)
    newline = text.rfind("\n", low, offset)
    if newline >= 0:
        return newline + 1
    for at in range(offset, low, -1):
        if " " <= text[at - 1] <= "~" and " " <= text[at] <= "~":
            return at
    newline = text.rfind("\n", 0, low)
    return newline + 1 if newline >= 0 else 0


def boundary_at_or_before(text: str, offset: int) -> int:
    """The last grapheme cluster boundary at or before ``offset``."""
    if offset <= 0:
        return 0
    if offset >= len(text):
        return len(text)
    best = _known_boundary(text, offset)
    for match in _CLUSTER_RUN.finditer(text, best):
        if match.end() > offset:
            break
        best = match.end()
    for match in _CLUSTER.finditer(text, best):
        if match.end() > offset:
            break
        best = match.end()
    return best


def grapheme_bounds(text: str, pos: int) -> tuple[int, int]:
    """The start and end of the grapheme cluster ``pos`` falls inside; ``(pos, pos)``
    when ``pos`` already is a boundary (positions are clamped to the text)."""
    if pos <= 0:
        return 0, 0
    if pos >= len(text):
        return len(text), len(text)
    start = boundary_at_or_before(text, pos)
    if start == pos:
        return pos, pos
    return start, grapheme_boundaries(text, start, pos + 1)[-1]
