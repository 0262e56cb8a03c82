"""The project's documentation as the dashboard's Guide page shows it, read from the
install (an on-call without internet access opens the remedy the page points at).

The docs ship in the wheel (``ctxledger_dashboard/docs``); in a clone they are the
repository's ``docs/``. A section is found by its GitHub heading anchor, so one link
names the same section here and on the project's repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

_HERE = Path(__file__).resolve().parent
#: Where the docs are: shipped in the package, else the clone's own folder.
DOCS_FOLDERS = (_HERE / "docs", _HERE.parent.parent / "docs")
GUIDE_PATH = "guide"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s#]+\.(?:md|yml|yaml))(?:#([^)\s]+))?\)")
_SLUG_DROPPED = re.compile(r"[^\w\- ]", re.UNICODE)


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    anchor: str
    text: str
    """The heading's line and everything up to the next heading of its level or above."""


def docs_folder() -> Path | None:
    return next((folder for folder in DOCS_FOLDERS if folder.is_dir()), None)


def guide_link(page: str, anchor: str | None = None) -> str:
    """The dashboard's own address of ``docs/<page>`` (and a section of it), relative, so
    it works under any base path."""
    query = {"page": page, **({"section": anchor} if anchor else {})}
    return f"{GUIDE_PATH}?{urlencode(query)}"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without markup, lower case, without
    punctuation other than ``-`` and ``_``, spaces as ``-``."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return _SLUG_DROPPED.sub("", text).replace(" ", "-")


def read_page(page: str) -> str | None:
    """``docs/<page>`` as text, or None: no such page (or a name outside the docs)."""
    folder = docs_folder()
    if folder is None or "/" in page or "\\" in page or page.startswith("."):
        return None
    path = folder / page
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def sections(markdown: str) -> list[Section]:
    """The page's sections, in order (headings inside code blocks are not headings)."""
    lines = markdown.splitlines()
    starts: list[tuple[int, int, str]] = []
    fenced = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (found := _HEADING.match(line)):
            starts.append((number, len(found.group(1)), found.group(2)))
    found_sections: list[Section] = []
    for index, (number, level, title) in enumerate(starts):
        end = next((n for n, lv, _ in starts[index + 1 :] if lv <= level), len(lines))
        text = "\n".join(lines[number:end])
        found_sections.append(Section(level, title, github_anchor(title), text))
    return found_sections


def for_the_dashboard(markdown: str) -> str:
    """Markdown as the Guide page renders it: comments out, pictures named (they are
    files beside the docs), links to other docs pages pointing at the Guide page."""
    text = _COMMENT.sub("", markdown)
    text = _IMAGE.sub(lambda m: f"*(picture: docs/{m.group(2)})*", text)
    return _LINK.sub(lambda m: f"[{m.group(1)}]({guide_link(m.group(2), m.group(3))})", text)
