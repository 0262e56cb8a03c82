"""User-supplied names (tools, agents, services, ids, rules, sinks) inside Streamlit
markdown: shown as the characters they are, never as markup.

Streamlit renders markdown, its own directives (``:red[…]``, ``:material/…:``, emoji
short codes) and ``$…$`` math, but no raw HTML. A name is put in a code span whose
backtick fence is longer than any run of backticks in it, with line breaks, other
control characters and invisible or reordering ones (bidi overrides, zero-width spaces)
shown as visible escapes (``visible_text``), so nothing in it can end the span or
disguise the name.
"""

from __future__ import annotations

import re

from ctxledger_dashboard.visible_text import visible

_BACKTICKS = re.compile(r"`+")


def code(name: object) -> str:
    """``name`` as an inline code span that shows it verbatim (invisible characters as
    visible escapes)."""
    text = visible(name)
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") or not text else text
    return f"{fence}{padded}{fence}"


#: What can start markup anywhere in a line (emphasis, code, links, directives, math,
#: autolinks, entities, tables, strikethrough). Characters that are markup only at the
#: start of a line (``-``, ``+``, ``.``, ``=``, ``>``) are escaped there only: the text
#: is one line (control characters are visible escapes), so only its first character can be.
_INLINE_MARKUP = re.compile(r"([\\`*_{}\[\]()<#|~:$&])")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def plain(text: object) -> str:
    """``text`` as one line of inline markdown that shows its characters, not markup."""
    escaped = _INLINE_MARKUP.sub(r"\\\1", visible(text))
    if escaped[:1] in _ASCII_PUNCTUATION and escaped[:1] != "\\":
        escaped = "\\" + escaped
    return escaped
