"""Known truncation markers: text that tells the model it is looking at a part."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: The placeholder an emergency trim leaves in place of a tool result (seed 001).
EMERGENCY_TRIM_PLACEHOLDER = (
    "[removed by emergency context trim to recover from a context-length-exceeded error; "
    "re-run the tool if the result is still needed]"
)


@dataclass(frozen=True)
class Marker:
    """A named regular expression that recognises one family of truncation markers.

    ``needles`` are lower-case literals of which any match must contain one; they let
    the scanner skip the regex on texts that cannot match (a substring test is far
    cheaper than a regex scan of a 400 KB result). Without needles the regex always runs.
    """

    name: str
    pattern: str
    needles: tuple[str, ...] = ()


DEFAULT_MARKERS: tuple[Marker, ...] = (
    Marker(
        "emergency_trim",
        r"\[removed by emergency context\s+trim",
        ("removed by emergency context",),
    ),
    Marker("ctxledger", r"\[ctxledger: (?:truncated|clipped|kept|spilled|page)", ("[ctxledger:",)),
    Marker(
        "truncated_en",
        r"(?i:\[(?:\.\.\.|…)?\s*truncated|\((?:output )?truncated\)|<truncated|"
        r"\boutput (?:was )?truncated\b|\btruncated (?:at|after|to) \d)",
        ("truncated",),
    ),
    Marker(
        "omitted_en",
        r"(?i:\b\d[\d,]* (?:more )?(?:lines|items|rows|records|results|chars|characters|bytes)"
        r" (?:omitted|not shown|truncated)\b|\[\.\.\. ?\d[\d,]* more\b)",
        ("omitted", "not shown", "truncated", "[..."),
    ),
    Marker("truncated_zh", r"已截断|已省略|截断(?:提示|标记)|内容过长.{0,6}省略", ("截断", "省略")),
    Marker("spilled_zh", r"已存外部|完整结果见引用", ("已存外部", "完整结果见引用")),
    Marker("json_truncated_flag", r'"truncated"\s*:\s*true', ('"truncated"',)),
)


class MarkerScanner:
    """Finds which known markers a text carries."""

    def __init__(self, markers: Iterable[Marker] = DEFAULT_MARKERS) -> None:
        self.markers = tuple(markers)
        self._compiled = [(m, re.compile(m.pattern)) for m in self.markers]

    def find(self, text: str) -> tuple[str, ...]:
        """Names of the markers present in ``text``, in the order they are listed."""
        lowered: str | None = None
        found: list[str] = []
        for marker, regex in self._compiled:
            if marker.needles:
                if lowered is None:
                    lowered = text.lower()
                if not any(needle in lowered for needle in marker.needles):
                    continue
            if regex.search(text):
                found.append(marker.name)
        return tuple(found)
