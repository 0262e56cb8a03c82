"""A structured tool result as a document around a record list: read it, find the
list, and render the document with only some of its rows.

:func:`clip_rows`, :func:`keep_structured` and :func:`paginate` all work on this form.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger._items import DEFAULT_ITEM_KEYS
from ctxledger.remedies.clip import as_text

#: The keys leading from the document to its record list (``()`` for a bare array).
Path = tuple[str, ...]


def dumps(value: Any) -> str:
    """The serialisation budgets are checked against: ``json.dumps`` without ASCII
    escaping and with the default separators."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Loaded:
    """A tool result read as JSON: the parsed value and the text it came as (if any)."""

    parsed: Any
    text: str
    ok: bool


def load(value: Any) -> Loaded:
    """Parse text or bytes as JSON; any other value goes through its JSON text (see
    :func:`ctxledger._serialize.to_text`), so dataclasses and models become plain JSON."""
    text = as_text(value)
    try:
        return Loaded(json.loads(text), text, True)
    except (ValueError, RecursionError):
        return Loaded(None, text, False)


def _key_path(key: str | Sequence[str] | None) -> Path | None:
    if key is None:
        return None
    if isinstance(key, str):
        return (key,)
    try:
        return tuple(str(k) for k in key)
    except TypeError:
        return None


def locate_rows(
    parsed: Any, key: str | Sequence[str] | None = None, keys: Sequence[str] = DEFAULT_ITEM_KEYS
) -> tuple[list[Any], Path] | None:
    """The record list of a parsed value and the path to it: the value itself when it
    is a list (path ``()``), the list under ``key`` (a key or a path of keys), else the
    first list under one of ``keys`` at the top level or one level down (``hits.hits``).
    """
    if isinstance(parsed, list):
        return parsed, ()
    if not isinstance(parsed, dict):
        return None
    path = _key_path(key)
    if path:
        node: Any = parsed
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return (node, path) if isinstance(node, list) else None
    for name in keys:
        value = parsed.get(name)
        if isinstance(value, list):
            return value, (name,)
    for name in keys:
        value = parsed.get(name)
        if isinstance(value, dict):
            for inner in keys:
                if isinstance(value.get(inner), list):
                    return value[inner], (name, inner)
    return None


def _replace_at(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    copy = dict(doc)
    copy[path[0]] = _replace_at(doc[path[0]], path[1:], value)
    return copy


class Envelope:
    """Renders the reduced document fast: the document is serialised once per shape
    with placeholders, and the rows (serialised once each) are joined into it."""

    def __init__(self, parsed: Any, path: Path, rows: Sequence[Any]) -> None:
        self.parsed = parsed
        self.path = path
        self.row_json = [dumps(row) for row in rows]
        nonce = secrets.token_hex(8)
        self._rows_slot = f"\x00ctxledger-rows-{nonce}\x00"
        self._by_slot = f"\x00ctxledger-kept-by-{nonce}\x00"

    def render(
        self,
        indices: Sequence[int],
        fields: Mapping[str, Any],
        *,
        kept_by: Mapping[str, str] | None = None,
        minimal: bool = False,
        fields_first: bool = False,
    ) -> str:
        """The document with only the rows at ``indices`` and ``fields`` added at the
        top (a bare array, or ``minimal``, becomes ``{"items": [...], **fields}``, or
        ``{**fields, "items": [...]}`` with ``fields_first``)."""
        extra = dict(fields)
        if kept_by is not None:
            extra["kept_by"] = self._by_slot
        if not self.path or not isinstance(self.parsed, dict):
            if fields_first:
                return self._fill({**extra, "items": self._rows_slot}, indices, kept_by)
            doc: dict[str, Any] = {"items": self._rows_slot}
        elif minimal:
            doc = {}
            node = doc
            for part in self.path[:-1]:
                node[part] = {}
                node = node[part]
            node[self.path[-1]] = self._rows_slot
        else:
            doc = _replace_at(self.parsed, self.path, self._rows_slot)
        for name, value in extra.items():
            if name in doc and doc[name] != value and f"original_{name}" not in doc:
                doc[f"original_{name}"] = doc[name]  # keep the tool's own field visible
            doc[name] = value
        return self._fill(doc, indices, kept_by)

    def _fill(
        self, doc: dict[str, Any], indices: Sequence[int], kept_by: Mapping[str, str] | None
    ) -> str:
        shell = dumps(doc)
        rows = "[" + ", ".join(self.row_json[i] for i in indices) + "]"
        shell = shell.replace(dumps(self._rows_slot), rows, 1)
        if kept_by is not None:
            by = ", ".join(f"{dumps(k)}: {dumps(v)}" for k, v in kept_by.items())
            shell = shell.replace(dumps(self._by_slot), "{" + by + "}", 1)
        return shell
