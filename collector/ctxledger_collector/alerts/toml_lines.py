"""Alert rules written in TOML: the data, and a best-effort line for every key."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from ctxledger_collector.alerts.problems import AlertsConfigError, Loc


def _toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # pragma: no cover - Python 3.10
        import importlib

        return importlib.import_module("tomli")
    except ImportError:  # pragma: no cover
        raise AlertsConfigError(
            ["TOML alert files need Python 3.11 or later, or 'pip install tomli'"]
        ) from None


_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column \d+|at end of document)\)\s*$")


def parse_toml(text: str, filename: str) -> Any:
    """The data of a TOML document; a syntax error is an :class:`AlertsConfigError`."""
    tomllib = _toml_module()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        lineno = getattr(error, "lineno", None)  # Python 3.14 has it; before, only the text
        match = _TOML_POSITION.search(message)
        if match is not None:
            lineno = lineno or (int(match.group(1)) if match.group(1) else len(text.splitlines()))
            message = message[: match.start()]
        line = f":{lineno}" if lineno else ""
        raise AlertsConfigError([f"{filename}{line}: TOML syntax error: {message}"]) from None


_TOML_HEADER = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[^\[\]#]+?)\s*\]\]?\s*(?:#.*)?$")


def toml_line_finder(text: str) -> Callable[[Loc], int | None]:
    """Best effort: tomllib keeps no positions, so lines are found by searching the text.

    Array-of-tables headers (``[[rules]]``) are counted to find ``rules[2]``, then the key
    is searched for inside that table. Multi-line strings that look like headers or keys,
    dotted keys and inline tables can mislead it; it then gives the closest parent found.
    """
    lines = text.splitlines()
    headers: list[tuple[int, str, bool]] = []  # (index, dotted name, is an array of tables)
    for index, line in enumerate(lines):
        match = _TOML_HEADER.match(line)
        if match:
            name = ".".join(part.strip().strip("\"'") for part in match["name"].split("."))
            headers.append((index, name, match["open"] == "[["))

    def section(start: int) -> tuple[int, int]:
        end = next((h[0] for h in headers if h[0] > start), len(lines))
        return start, end

    def find(loc: Loc) -> int | None:
        start, end = 0, headers[0][0] if headers else len(lines)
        line: int | None = 1 if lines else None  # the top-level table
        table = ""
        i = 0
        while i < len(loc):
            key = loc[i]
            if not isinstance(key, str):
                break
            dotted = f"{table}.{key}" if table else key
            following = loc[i + 1] if i + 1 < len(loc) else None
            if isinstance(following, int):
                arrays = [h[0] for h in headers if h[1] == dotted and h[2]]
                if following < len(arrays):
                    start, end = section(arrays[following])
                    line, table, i = start + 1, dotted, i + 2
                    continue
            tables = [h[0] for h in headers if h[1] == dotted and not h[2]]
            if tables:
                start, end = section(tables[0])
                line, table, i = start + 1, dotted, i + 1
                continue
            pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
            return next((j + 1 for j in range(start, end) if pattern.match(lines[j])), line)
        return line

    return find
