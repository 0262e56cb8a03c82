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
    """A named regular expression that recognises one family of truncation markers."""

    name: str
    pattern: str


DEFAULT_MARKERS: tuple[Marker, ...] = (
    Marker("emergency_trim", r"\[removed by emergency context\s+trim"),
    Marker("ctxledger", r"\[ctxledger: (?:truncated|clipped|kept|spilled|page)"),
    Marker(
        "truncated_en",
        r"(?i:\[(?:\.\.\.|…)?\s*truncated|\((?:output )?truncated\)|<truncated|"
        r"\boutput (?:was )?truncated\b|\btruncated (?:at|after|to) \d)",
    ),
    Marker(
        "omitted_en",
        r"(?i:\b\d[\d,]* (?:more )?(?:lines|items|rows|records|results|chars|characters|bytes)"
        r" (?:omitted|not shown|truncated)\b|\[\.\.\. ?\d[\d,]* more\b)",
    ),
    Marker("truncated_zh", r"已截断|已省略|截断(?:提示|标记)|内容过长.{0,6}省略"),
    Marker("spilled_zh", r"已存外部|完整结果见引用"),
    Marker("json_truncated_flag", r'"truncated"\s*:\s*true'),
)


class MarkerScanner:
    """Finds which known markers a text carries, in one pass of one regex."""

    def __init__(self, markers: Iterable[Marker] = DEFAULT_MARKERS) -> None:
        self.markers = tuple(markers)
        parts = [f"(?P<m{i}>{m.pattern})" for i, m in enumerate(self.markers)]
        self._regex = re.compile("|".join(parts)) if parts else None

    def find(self, text: str) -> tuple[str, ...]:
        """Names of the markers present in ``text``, in the order they are listed."""
        if self._regex is None:
            return ()
        seen: set[int] = set()
        for match in self._regex.finditer(text):
            group = match.lastgroup
            if group is not None:
                seen.add(int(group[1:]))
                if len(seen) == len(self.markers):
                    break
        return tuple(self.markers[i].name for i in sorted(seen))
