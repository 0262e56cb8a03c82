"""An example agent's docstring as its ``--help`` shows it: plain text for a terminal,
not reStructuredText (``code``, :func:`roles`), paragraphs wrapped, the indented
command lines kept as they are."""

from __future__ import annotations

import inspect
import re
import textwrap

_ROLE = re.compile(r":[a-z]+:`~?\.?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_WIDTH = 88
#: The modes the docstrings name, as the flags that choose them.
_MODE_FLAGS = {"failure": "--failure", "remedy": "--remedy"}


def _literal(found: re.Match[str]) -> str:
    return _MODE_FLAGS.get(found.group(1), found.group(1))


def plain_help(docstring: str, width: int = _WIDTH) -> str:
    """``docstring`` without its markup: roles become the name they point at, literals
    their text (a mode, its flag); each paragraph is wrapped to ``width``, indented
    blocks are kept."""
    text = _LITERAL.sub(_literal, _ROLE.sub(r"\1", inspect.cleandoc(docstring)))
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if all(line.startswith(" ") for line in lines):
            paragraphs.append("\n".join(lines))  # a command line: as written
        else:
            paragraphs.append(textwrap.fill(" ".join(line.strip() for line in lines), width))
    return "\n\n".join(paragraphs)
