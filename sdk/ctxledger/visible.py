"""Names as the characters they are: a character that is invisible, or that reorders the
text around it, is shown as a visible escape, so that one name cannot pass for another.

A tool named ``safe\\u202etxt.exe`` reads "safeexe.txt" wherever the right-to-left
override (U+202E) takes effect; shown by :func:`visible` it reads ``safe⟨U+202E⟩txt.exe``.
C0 control characters and DEL become their Control Pictures (ESC: ␛). Every other control
character, every format character (Unicode category Cf: the bidi embeddings, overrides,
isolates and marks, the zero-width space and joiners, the BOM, the word joiner, the soft
hyphen, tags), the line and paragraph separators, lone surrogates and the fillers that
draw as blanks become ``⟨U+XXXX⟩``. Everything else, Chinese included, is left as it is.

Public for every place a name is shown to a person: the dashboard and the command line.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["escape_invisible_in_json", "visible"]

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Letters and marks that draw as nothing: the combining grapheme joiner, the Hangul
#: fillers and the Khmer inherent vowels (Unicode's Default_Ignorable_Code_Point).
_BLANK_LOOKING = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0})


def _shown(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block
    if code == 0x7F:
        return "\u2421"
    if unicodedata.category(char) in _ESCAPED_CATEGORIES or code in _BLANK_LOOKING:
        return f"⟨U+{code:04X}⟩"
    return char


def visible(text: object) -> str:
    """``text`` with its invisible and reordering characters shown as visible escapes."""
    text = str(text)
    if text.isprintable() and not any(ord(c) in _BLANK_LOOKING for c in text):
        return text  # the common case: isprintable() is False for every Cc, Cf, Zl, Zp, Cs
    return "".join(_shown(char) for char in text)


#: What :func:`escape_invisible_in_json` escapes: C1 controls and DEL, the soft hyphen,
#: the Arabic number signs and letter mark, the Mongolian vowel separator, zero-width
#: characters and marks, the line and paragraph separators, the bidi embeddings,
#: overrides and isolates, invisible operators, the BOM, the interlinear annotations,
#: the tags, and lone surrogates.
_INVISIBLE_IN_JSON = re.compile(
    "[\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
    "\ud800-\udfff]"
)


def _json_escape(found: re.Match[str]) -> str:
    """``\\uXXXX``, or a surrogate pair of them past U+FFFF (the tags)."""
    code = ord(found.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_invisible_in_json(text: str) -> str:
    """A JSON document's text with its invisible and reordering characters written as
    ``\\uXXXX`` escapes: a parser reads the same strings, a person reading the raw text
    (a log line, ``curl``) sees the escape instead of a reversed or hidden name. Only
    for JSON text, where these characters can only be inside strings (and a character
    past U+FFFF here is a tag, escaped as its surrogate pair)."""
    return _INVISIBLE_IN_JSON.sub(_json_escape, text)
