"""User-supplied names (tools, agents, services, ids, rules, sinks) inside Streamlit
markdown: shown as the characters they are, never as markup.

Streamlit renders markdown, its own directives (``:red[…]``, ``:material/…:``, emoji
short codes) and ``$…$`` math, but no raw HTML. A name is put in a code span whose
backtick fence is longer than any run of backticks in it, with line breaks and other
control characters shown as visible symbols, so nothing in it can end the span.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BACKTICKS = re.compile(r"`+")


def _visible(char: re.Match[str]) -> str:
    code = ord(char.group())
    return "\u2421" if code == 0x7F else chr(0x2400 + code)  # the Control Pictures block


def code(name: object) -> str:
    """``name`` as an inline code span that shows it verbatim (control characters as
    their visible pictures)."""
    text = _CONTROL.sub(_visible, str(name))
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") or not text else text
    return f"{fence}{padded}{fence}"


_MARKUP = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$=^&])")


def plain(text: object) -> str:
    """``text`` with every markdown and directive character backslash-escaped."""
    return _MARKUP.sub(r"\\\1", _CONTROL.sub(_visible, str(text)))
