"""Known truncation markers: text that tells the model it is looking at a part."""

from __future__ import annotations

import re
import unicodedata
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
    # Claude Code's own reductions: a long output saved to a file with a preview kept, an
    # old result cleared from the context.
    Marker("persisted_output", r"<persisted-output>", ("<persisted-output>",)),
    Marker(
        "cleared_tool_result",
        r"\[Old tool result content cleared\]",
        ("old tool result content cleared",),
    ),
    # "truncated" rather than '"truncated"': the scanner then tests one needle fewer.
    Marker("json_truncated_flag", r'"truncated"\s*:\s*true', ("truncated",)),
)


def _found_in_folded_bytes(needle: str) -> bool:
    """Whether ``needle in text.lower()`` can be decided on the UTF-8 bytes of the text with
    only ASCII letters lowered (one fast pass, no lower-cased copy of the text).

    It can when no character of the needle is produced by lower-casing a non-ASCII
    character: the only ASCII ones are ``k`` (from the Kelvin sign) and ``i`` (from ``İ``,
    followed by a combining dot, so only a final ``i`` matters); letters without case
    (category Lo: CJK, kana, hangul) are never produced. A test checks this over Unicode.
    """
    if "k" in needle or needle.endswith("i"):
        return False
    return all(char.isascii() or unicodedata.category(char) == "Lo" for char in needle)


class MarkerScanner:
    """Finds which known markers a text carries."""

    def __init__(self, markers: Iterable[Marker] = DEFAULT_MARKERS) -> None:
        self.markers = tuple(markers)
        needles = list(dict.fromkeys(n for marker in self.markers for n in marker.needles))
        self._folded_needles = tuple(
            n.encode("utf-8") for n in needles if _found_in_folded_bytes(n)
        )
        self._lowered_needles = tuple(n for n in needles if not _found_in_folded_bytes(n))
        order = [n for n in needles if _found_in_folded_bytes(n)] + list(self._lowered_needles)
        self._compiled = [
            (m.name, re.compile(m.pattern), tuple(order.index(n) for n in m.needles))
            for m in self.markers
        ]

    def find(self, text: str, utf8: bytes | None = None) -> tuple[str, ...]:
        """Names of the markers present in ``text``, in the order they are listed.
        ``utf8`` is the text's UTF-8 encoding (``surrogatepass``), when the caller has it."""
        if utf8 is None:
            utf8 = text.encode("utf-8", errors="surrogatepass")
        folded = utf8.lower()
        present = [needle in folded for needle in self._folded_needles]
        if self._lowered_needles:
            lowered = text.lower()
            present += [needle in lowered for needle in self._lowered_needles]
        any_needle = True in present
        found: list[str] = []
        for name, regex, needles in self._compiled:
            if needles and not (any_needle and any(present[index] for index in needles)):
                continue
            if regex.search(text):
                found.append(name)
        return tuple(found)
