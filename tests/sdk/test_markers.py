"""Marker detection: the needles that let the scanner skip a regex never hide a match."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from ctxledger._markers import DEFAULT_MARKERS, Marker, MarkerScanner, _found_in_folded_bytes


def _lower_case_images() -> set[str]:
    """Every character that lower-casing some other character produces."""
    images: set[str] = set()
    for code_point in range(sys.maxunicode + 1):
        char = chr(code_point)
        lowered = char.lower()
        if lowered != char:
            images.update(lowered)
    return images


def test_the_folded_bytes_shortcut_rests_on_what_lower_casing_produces():
    """Needles are looked for in ASCII-lowered UTF-8 when no character of theirs can come
    from lower-casing a non-ASCII character. That rests on two facts of Unicode, checked
    here for the running Python's tables."""
    images = _lower_case_images()
    from_non_ascii = {
        char
        for code_point in range(0x80, sys.maxunicode + 1)
        for char in chr(code_point).lower()
        if char.isascii() and chr(code_point).lower() != chr(code_point)
    }
    assert from_non_ascii == {"i", "k"}  # İ -> "i\u0307", KELVIN SIGN -> "k"
    assert "\u0130".lower() == "i\u0307"
    assert not [c for c in images if unicodedata.category(c) == "Lo"]


def test_every_default_needle_takes_the_shortcut():
    needles = {needle for marker in DEFAULT_MARKERS for needle in marker.needles}
    assert all(_found_in_folded_bytes(needle) for needle in needles)


@pytest.mark.parametrize(
    ("needle", "shortcut"),
    [("kept", False), ("taxi", False), ("café", False), ("omitted", True), ("截断", True)],
)
def test_needles_that_lower_casing_could_produce_are_looked_for_in_lowered_text(needle, shortcut):
    assert _found_in_folded_bytes(needle) is shortcut


def _reference_find(markers: tuple[Marker, ...], text: str) -> tuple[str, ...]:
    """What the scanner must find: a needle in ``text.lower()`` lets the regex run."""
    import re

    lowered = text.lower()
    return tuple(
        m.name
        for m in markers
        if (not m.needles or any(n in lowered for n in m.needles)) and re.search(m.pattern, text)
    )


MINE = (
    Marker("kept", r"(?i)\bkept \d+\b", needles=("kept",)),
    Marker("taxi", r"(?i)taxi", needles=("taxi",)),
    Marker("cafe", r"(?i)café", needles=("café",)),
    Marker("always", r"\[cut\]"),
)


@pytest.mark.parametrize(
    "text",
    [
        "…[已截断：共 500 行]",
        "[... 3 MORE lines]",
        "OUTPUT WAS TRUNCATED",
        '{"Truncated": TRUE, "truncated": true}',
        "5 MORE ROWS OMİTTED",
        "\u212aEPT 12 rows",
        "TAXİ",
        "CAFÉ au lait",
        "[cut]",
        "\ud800 lone [ctxledger: clipped 3]",
        "nothing to see here",
    ],
)
def test_the_scanner_finds_what_the_needles_and_regexes_define(text):
    markers = DEFAULT_MARKERS + MINE
    assert MarkerScanner(markers).find(text) == _reference_find(markers, text)
    utf8 = text.encode("utf-8", errors="surrogatepass")
    assert MarkerScanner(markers).find(text, utf8) == _reference_find(markers, text)
