"""The fenced code blocks of a Markdown file, each with the `docs-test` directive above it.

A block may be preceded (on the line before its fence) by an HTML comment that tells
``test_code_blocks.py`` how to treat it; readers of the rendered page never see it:

* ``<!-- docs-test: skip REASON -->``: not run, for the reason given.
* ``<!-- docs-test: file NAME -->``: written to NAME in the document's working folder.
* ``<!-- docs-test: server -->``: each command started in the background with
  ``--port <free port>`` added (argparse takes the last ``--port``); it runs until the end.
* ``<!-- docs-test: needs serve provider -->``: run after a collector (``ctxledger serve``)
  and a provider stand-in (``ctxledger provider``) were started on free ports.
* ``<!-- docs-test: env -->``: ``export NAME=URL`` lines of the servers' addresses; the test
  checks them and points each variable at its own server instead.
* ``<!-- docs-test: expect TEXT -->``: run; what it prints must contain TEXT.
* ``<!-- docs-test: in-clone -->``: run from the repository's root, as a reader with a clone.
* ``<!-- docs-test: context NAME -->``: a Python fragment of the reader's own program, run
  after ``tests/docs/contexts/NAME.py`` (in one script), which gives it the names it takes
  from that program (``call``, ``messages``, ``db``, …).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?P<arg>.*?)\s*-->\s*$")
DIRECTIVES = ("skip", "file", "server", "needs", "env", "expect", "in-clone", "context")


@dataclass(frozen=True)
class CodeBlock:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    directive: str = ""  # one of DIRECTIVES, or "" (run it as it is)
    argument: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def code_blocks(path: Path) -> list[CodeBlock]:
    """Every fenced block of ``path`` in order, dedented (blocks inside list items)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[CodeBlock] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        start = index
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            index += 1
        body = textwrap.dedent("\n".join(lines[start + 1 : index])) + "\n"
        directive = _DIRECTIVE.match(lines[start - 1]) if start else None
        kind, argument = (directive["kind"], directive["arg"]) if directive else ("", "")
        if kind and kind not in DIRECTIVES:
            raise ValueError(f"{path.name}:{start + 1}: unknown docs-test directive {kind!r}")
        blocks.append(CodeBlock(path, start + 1, opening["lang"], body, kind, argument))
        index += 1
    return blocks
