"""The verdict timeline's range fitted to the data: a fresh collector's few minutes of
journeys are spread over the chart instead of one bar of a 24-hour range. Pure."""

from __future__ import annotations

import math
from typing import Any

#: Bar widths the fitted timeline chooses from, in seconds (1 s up to 30 days).
NICE_WIDTHS = (
    *(1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800),
    *(21_600, 43_200, 86_400, 172_800, 604_800, 2_592_000),
)
#: The data is fitted when it fills less than this share of the range.
FIT_BELOW = 0.25


def _nice_width(seconds: float) -> int:
    return next((w for w in NICE_WIDTHS if w >= seconds), NICE_WIDTHS[-1])


def narrower_range(timeline: dict[str, Any], buckets: int) -> tuple[float, float, int] | None:
    """(since, until, buckets) of the span the timeline's bars cover, in whole bars of a
    round width, when the data fills less than a quarter of the timeline's range; None
    when the range already fits (or bars one second wide cannot be narrowed)."""
    points = timeline["points"]
    width = timeline["bucket_seconds"]
    since, until = timeline["since"], timeline["until"]
    if not points or not width or since is None or until is None or width <= 1:
        return None
    first = min(point["start"] for point in points)
    last = max(point["start"] for point in points) + width
    if last - first >= FIT_BELOW * (until - since):
        return None
    bar = _nice_width((last - first) / buckets)
    start = math.floor(first / bar) * bar
    end = math.ceil(last / bar) * bar
    return float(start), float(end), max(1, round((end - start) / bar))


def duration(seconds: float) -> str:
    """A bar's width in words: "30 minutes", "1 hour", "2 s"."""
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    return f"{seconds:g} s"
