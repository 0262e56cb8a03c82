"""Recognise how a text that is not JSON carries its data: JSON Lines, JSON cut at a
budget, Python literals (``str(obj)``), markdown and CSV/TSV tables, YAML, or plain text.

Only reached when the text did not parse as JSON; each reader runs only when a cheap look
at the text's start says it may apply. A text that looks like data but no reader accepts
has no item count (``unparsed``): unknown, never 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger import semconv as sc
from ctxledger._items import find_item_list, recover_items
from ctxledger._pyrepr import NotPython, json_key, read_python
from ctxledger._tables import read_csv_table, read_markdown_table, table_format

#: YAML over this size is not read (a pure-Python parser may be all there is).
MAX_YAML_CHARS = 1024 * 1024
#: Values a YAML document may expand to through its aliases before it is not read.
MAX_YAML_NODES = 200_000
_MAX_YAML_DEPTH = 100


@dataclass(frozen=True)
class Reading:
    """What one text was recognised as.

    ``records`` are its items (None: no count is known), ``data`` says they are values
    (ids and fields apply) rather than lines, ``value`` is the data read whole, the
    source of the canonical form (None when the text holds more than that data), and
    ``cut`` says the text ended inside its data."""

    format: str
    records: Sequence[Any] | None
    data: bool = False
    value: Any = None
    cut: bool = False

    @property
    def whole(self) -> bool:
        return self.value is not None


# How data begins: JSON or Python containers ("[INFO] …" and "[1] First" are not).
_DATA_START = re.compile(
    r"""\s*(?:\{\s*(?:["'}\d-]|True|False|None)"""
    r"""|\[\s*(?:[\[{("'\]\d-]|True|False|None|true|false|null|[^\W\d][\w.]*\()"""
    r"""|\(\s*["'\[{(\d-])"""
)
_BRACKET_TAG = re.compile(r"\s*\[[^\[\]{}()\"',:]*\]\s*[^\s,\]}]")
_JSON_START = re.compile(r'\s*(?:\{\s*(?:"|\})|\[\s*(?:[\[{"\]\d-]|true|false|null))')
_YAML_START = re.compile(
    r"(?:---[ \t]*\r?\n)?(?:-[ \t]+\S|-\r?\n|[^\s#\-\[{|>'\"%@`!*&?,][^\n:]*:(?:[ \t]|\r?\n))"
)


def looks_like_data(text: str) -> bool:
    return bool(_DATA_START.match(text)) and not _BRACKET_TAG.match(text)


def read_text(text: str, keys: Sequence[str]) -> Reading:
    """How ``text`` (which is not JSON) carries its records."""
    if looks_like_data(text):
        return _read_data(text, keys)
    stripped = text.lstrip()
    if "|" in text:
        table = read_markdown_table(text)
        if table is not None:
            return Reading(
                sc.FORMAT_MARKDOWN_TABLE,
                table.rows,
                data=True,
                value=table.rows if table.whole else None,
            )
    if "\n" in stripped and _YAML_START.match(stripped):
        reading = _read_yaml(text, keys)
        if reading is not None:
            return reading
    if "," in text or "\t" in text:
        csv_table = read_csv_table(text)
        if csv_table is not None:
            whole = csv_table.whole
            rows = csv_table.rows
            return Reading(table_format(text), rows, True, rows if whole else None, not whole)
    return Reading(sc.FORMAT_TEXT, text.splitlines())


def _read_data(text: str, keys: Sequence[str]) -> Reading:
    jsonl = _read_json_lines(text)
    if jsonl is not None:
        return jsonl
    recovered = recover_items(text, keys) if _JSON_START.match(text) else None
    if recovered:
        return Reading(sc.FORMAT_JSON_CUT, recovered, data=True, cut=True)
    try:
        value, whole = read_python(text)
        python = True
    except NotPython:
        value, whole, python = None, False, False
    if whole:
        # Not a cut JSON text whose records were all lost: Python's str() of records
        # whose strings hold brackets (the JSON scan reads ``'[{'`` as structure).
        return Reading(sc.FORMAT_PYTHON, find_item_list(value, keys), data=True, value=value)
    if recovered is not None:  # a JSON text cut before its first complete record
        return Reading(sc.FORMAT_JSON_CUT, recovered, data=True, cut=True)
    if not python:
        return Reading(sc.FORMAT_UNPARSED, None)
    return Reading(sc.FORMAT_PYTHON_CUT, find_item_list(value, keys), data=True, cut=True)


def _read_json_lines(text: str) -> Reading | None:
    lines = [line for line in text.split("\n") if line.strip()]  # JSON Lines end in \n only
    if len(lines) < 2 or lines[0].lstrip()[:1] not in ("{", "["):
        return None
    records: list[Any] = []
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            if index == len(lines) - 1 and records:  # the last line was cut
                return Reading(sc.FORMAT_JSONL, records, data=True, cut=True)
            return None
        if not isinstance(record, (dict, list)):
            return None
        records.append(record)
    return Reading(sc.FORMAT_JSONL, records, data=True, value=records)


def _read_yaml(text: str, keys: Sequence[str]) -> Reading | None:
    if len(text) > MAX_YAML_CHARS:
        return None
    try:
        import yaml  # type: ignore[import-untyped]  # no types-PyYAML in the dev tools
    except ImportError:  # PyYAML is optional for the SDK: without it YAML counts as lines
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        loaded = yaml.load(text, Loader=loader)  # a safe loader: no objects built
        value = _plain_yaml(loaded, [0], 0)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    records = find_item_list(value, keys)
    if records is None and not (
        isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values())
    ):
        return None  # a flat mapping ("Error: not found") reads better as lines
    return Reading(sc.FORMAT_YAML, records, data=True, value=value)


def _plain_yaml(value: Any, seen: list[int], depth: int) -> Any:
    """A loaded YAML document with JSON's keys, bounded: aliases can make a small text
    expand to a huge tree."""
    seen[0] += 1
    if seen[0] > MAX_YAML_NODES or depth > _MAX_YAML_DEPTH:
        raise ValueError("YAML too large once expanded")
    if isinstance(value, dict):
        return {json_key(k): _plain_yaml(v, seen, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain_yaml(v, seen, depth + 1) for v in value]
    return value
