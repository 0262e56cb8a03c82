"""Which parts of a time range the journey counters can answer, and which only the
reports can. Pure.

A counter bucket answers for a part of the range only when the bucket lies wholly
inside it. So a slice [start, end) of the range (one timeline bucket, or the whole
range for a breakdown) is covered by whole days where it can be, whole hours around
them, whole minutes around those, and the reports answer for what is left at its
edges: less than a minute at each end. Unbounded ends are covered by days.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ctxledger_collector.storage.journey_counts import GRAINS, bucket_of

#: Unbounded ends, as multiples of every grain far outside any real time.
EARLIEST = -(2**32) * GRAINS[-1]
LATEST = 2**32 * GRAINS[-1]


@dataclass(frozen=True)
class Slice:
    """[start, end) of a range, counted under ``label`` (a timeline bucket's start)."""

    label: float
    start: float | None
    end: float | None


@dataclass(frozen=True)
class CounterSpan:
    """Buckets of one grain, ``start`` <= bucket < ``end``: times [start, end)."""

    grain: int
    start: int
    end: int


@dataclass(frozen=True)
class TimeSpan:
    """Times ``start`` <= t < ``end`` that only the reports can answer for."""

    start: float
    end: float


@dataclass
class Plan:
    counters: list[CounterSpan] = field(default_factory=list)
    reports: list[TimeSpan] = field(default_factory=list)


def _ceil(moment: float, grain: int) -> int:
    bucket = bucket_of(moment, grain)
    return bucket if bucket == moment else bucket + grain


def _whole(start: int, end: int, grains: Sequence[int]) -> Iterator[CounterSpan]:
    """[start, end) (multiples of the finest grain) as spans of whole buckets, coarsest
    where they fit."""
    if start >= end:
        return
    grain, finer = grains[0], grains[1:]
    if not finer:
        yield CounterSpan(grain, start, end)
        return
    low, high = _ceil(start, grain), bucket_of(end, grain)
    if low >= high:
        yield from _whole(start, end, finer)
        return
    yield from _whole(start, low, finer)
    yield CounterSpan(grain, low, high)
    yield from _whole(high, end, finer)


def _merged(spans: Sequence[CounterSpan]) -> list[CounterSpan]:
    out: list[CounterSpan] = []
    for span in sorted(spans, key=lambda s: (s.grain, s.start)):
        last = out[-1] if out else None
        if last is not None and last.grain == span.grain and last.end == span.start:
            out[-1] = CounterSpan(span.grain, last.start, span.end)
        else:
            out.append(span)
    return out


def _merged_times(spans: Sequence[TimeSpan]) -> list[TimeSpan]:
    out: list[TimeSpan] = []
    for span in sorted(spans, key=lambda s: s.start):
        if out and out[-1].end == span.start:
            out[-1] = TimeSpan(out[-1].start, span.end)
        else:
            out.append(span)
    return out


def plan(slices: Sequence[Slice]) -> Plan:
    """The counter spans and the report spans that together cover every slice exactly
    once (adjacent spans merged; every counter bucket inside a single slice)."""
    coarse_first = tuple(sorted(GRAINS, reverse=True))
    finest = coarse_first[-1]
    counters: list[CounterSpan] = []
    reports: list[TimeSpan] = []
    for piece in slices:
        start = EARLIEST if piece.start is None else piece.start
        end = LATEST if piece.end is None else piece.end
        if start >= end:
            continue
        low, high = _ceil(start, finest), bucket_of(end, finest)
        if low >= high:
            reports.append(TimeSpan(start, end))
            continue
        if start < low:
            reports.append(TimeSpan(start, low))
        if high < end:
            reports.append(TimeSpan(high, end))
        counters.extend(_whole(low, high, coarse_first))
    return Plan(_merged(counters), _merged_times(reports))


def timeline_slices(since: float, until: float, width: int) -> list[Slice]:
    """[since, until) cut at the multiples of ``width`` (the timeline's buckets, aligned
    to the epoch), each piece labelled with its bucket's start."""
    slices = []
    start = bucket_of(since, width)
    while start < until:
        slices.append(Slice(float(start), max(since, start), min(until, start + width)))
        start += width
    return slices
