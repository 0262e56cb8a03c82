"""Which characters the dashboard shows as visible escapes, and which it leaves alone."""

from __future__ import annotations

import pytest

from ctxledger_dashboard.markdown_text import code, plain
from ctxledger_dashboard.visible_text import visible

BIDI = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
INVISIBLE = [*BIDI, 0x200E, 0x200F, 0x061C, 0x200B, 0x200C, 0x200D, 0xFEFF, 0x2060, 0x00AD]
INVISIBLE += [0x2028, 0x2029, 0x0085, 0xE0041, 0x3164, 0x115F]


@pytest.mark.parametrize("code_point", INVISIBLE, ids=[f"U+{c:04X}" for c in INVISIBLE])
def test_an_invisible_or_reordering_character_is_shown_by_its_code_point(code_point: int) -> None:
    assert visible(f"a{chr(code_point)}b") == f"a⟨U+{code_point:04X}⟩b"


def test_control_characters_stay_control_pictures() -> None:
    assert visible("a\x1bb\nc\x7f") == "a␛b␊c␡"


def test_ordinary_text_is_left_as_it_is() -> None:
    text = "工具/搜索　知识库 · café — 🙂 ü 한국어 עברית"  # an ideographic space, RTL letters
    assert visible(text) == text


def test_markdown_shows_the_escapes_in_code_and_plain_text() -> None:
    assert code("safe\u202etxt.exe") == "`safe⟨U+202E⟩txt.exe`"
    assert plain("agent\u2067") == "agent⟨U+2067⟩"
