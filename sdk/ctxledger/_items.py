"""Find the records in a tool result: the JSON array, the list under a known key, the
complete records left in JSON that was cut, or the lines of plain text."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_ITEM_KEYS: tuple[str, ...] = (
    "items",
    "results",
    "data",
    "rows",
    "hits",
    "records",
    "documents",
    "docs",
    "entries",
    "matches",
)
DEFAULT_ID_FIELDS: tuple[str, ...] = ("id", "_id", "uuid", "doc_id", "record_id", "key")

# A JSON string (with escapes) or one structural character.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],]')
# How JSON (possibly cut) begins; "[INFO] ..." log lines do not.
_JSON_START = re.compile(r'\s*(?:\{\s*(?:"|\})|\[\s*(?:[\[{"\]\d-]|true|false|null))')


@dataclass(frozen=True)
class ItemView:
    """The records found in one text. ``kind`` says how they were found."""

    kind: str  # "json", "recovered" (complete records of cut JSON), "lines" or "none"
    items: Sequence[Any]


def find_item_list(parsed: Any, keys: Sequence[str]) -> list[Any] | None:
    """The record list of a parsed JSON value: itself when it is a list, else the first
    list under one of ``keys`` (one level of nesting allowed, e.g. ``hits.hits``)."""
    if isinstance(parsed, list):
        return parsed
    if not isinstance(parsed, dict):
        return None
    for key in keys:
        value = parsed.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            inner = find_item_list_in_dict(value, keys)
            if inner is not None:
                return inner
    return None


def find_item_list_in_dict(parsed: dict[str, Any], keys: Sequence[str]) -> list[Any] | None:
    for key in keys:
        value = parsed.get(key)
        if isinstance(value, list):
            return value
    return None


def item_id(item: Any, id_fields: Sequence[str]) -> str | None:
    """The identity of a record: its first present id field, as text."""
    if not isinstance(item, dict):
        return None
    for name in id_fields:
        value = item.get(name)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return None


def _array_start(text: str, keys: Sequence[str]) -> int | None:
    stripped = len(text) - len(text.lstrip())
    if text[stripped : stripped + 1] == "[":
        return stripped
    if not keys:
        return None
    key_pattern = "|".join(re.escape(k) for k in keys)
    match = re.search(rf'"(?:{key_pattern})"\s*:\s*\[', text)
    return match.end() - 1 if match else None


def recover_items(text: str, keys: Sequence[str]) -> list[Any] | None:
    """The complete records of a JSON text that no longer parses (e.g. cut at a char
    budget). None when no record array can be located."""
    start = _array_start(text, keys)
    if start is None:
        return None
    items: list[Any] = []
    depth = 0
    element_start: int | None = None
    for token in _TOKEN.finditer(text, start + 1):
        char = token.group()
        if char in "{[":
            if depth == 0:
                element_start = token.start()
            depth += 1
        elif char in "}]":
            if depth == 0:  # end of the record array
                break
            depth -= 1
            if depth == 0 and element_start is not None:
                with contextlib.suppress(ValueError):
                    items.append(json.loads(text[element_start : token.end()]))
                element_start = None
    return items


def view_items(text: str, parsed: Any, json_valid: bool, keys: Sequence[str]) -> ItemView:
    """The records of a measured text, however it is shaped."""
    if json_valid:
        found = find_item_list(parsed, keys)
        return ItemView("json", found) if found is not None else ItemView("none", ())
    if _JSON_START.match(text):
        recovered = recover_items(text, keys)
        if recovered is not None:
            return ItemView("recovered", recovered)
    return ItemView("lines", text.splitlines())
