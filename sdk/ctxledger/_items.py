"""Find the records in parsed data: the array itself, the list under a known key, or the
complete records left in JSON that was cut."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
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
    budget). None when no record array can be located, or a complete record in it is
    not JSON."""
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
                try:
                    items.append(json.loads(text[element_start : token.end()]))
                except (ValueError, RecursionError):  # not JSON (Python's str(), say)
                    return None
                element_start = None
    return items
