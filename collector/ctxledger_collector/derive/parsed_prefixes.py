"""Parse only what is new in a conversation's messages.

Every request of an agent run re-sends the conversation so far: as a rule, request k+1's
``gen_ai.input.messages`` is request k's text with the new messages written before its
closing bracket. The messages parsed from a request are kept, per conversation and
bounded; a later request whose text begins with the same characters, up to the end of
the last message, parses only its tail. Anything else (a trim, a rewrite of an earlier
message, a re-serialization, a cut) is parsed whole. Either way the messages are the
same list (``tests/collector/test_parsed_prefixes.py`` holds them equal), so what the
rules judge never depends on what this cache held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

T = TypeVar("T")

#: The whitespace JSON allows between tokens (``str.strip()`` would take more).
JSON_SPACE = " \t\n\r"


@dataclass(frozen=True)
class _Entry(Generic[T]):
    #: The text up to the end of its last element: its closing bracket taken off.
    prefix: str
    items: tuple[T, ...]


def json_array(text: str | bytes) -> list[Any]:
    """``text`` parsed, when it is a JSON array; ValueError otherwise."""
    document = orjson.loads(text)
    if not isinstance(document, list):
        raise ValueError("messages must be a JSON array")
    return document


class ParsedPrefixes:
    """The items last parsed per key, to parse a text that extends them from its tail.

    ``convert`` maps a parsed JSON array to items element by element (so the items of
    ``a + b`` are those of ``a`` then those of ``b``), and the items are never changed
    after. Texts under ``min_chars`` are parsed whole and not kept; at most ``max_chars``
    of prefixes are kept, the least recently used given up first (0 keeps none).
    Thread-safe.
    """

    def __init__(self, max_chars: int = 2_000_000, min_chars: int = 4096) -> None:
        self.max_chars = max_chars
        self.min_chars = min_chars
        self._entries: OrderedDict[Hashable, _Entry[Any]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        #: Texts parsed from their tail / whole (whole includes those too short to keep).
        self.tail_parses = 0
        self.whole_parses = 0

    def parse(self, key: Hashable, text: str, convert: Callable[[list[Any]], list[T]]) -> list[T]:
        """The items of ``text``, a JSON array; ValueError when it is not one."""
        if self.max_chars <= 0 or len(text) < self.min_chars:
            self.whole_parses += 1
            return convert(json_array(text))
        with self._lock:
            entry = self._entries.get(key)
        items = None if entry is None else self._from_tail(entry, text, convert)
        if items is None:
            items = convert(json_array(text))
            self.whole_parses += 1
        else:
            self.tail_parses += 1
        self._keep(key, text, items)
        return items

    @staticmethod
    def _from_tail(
        entry: _Entry[T], text: str, convert: Callable[[list[Any]], list[T]]
    ) -> list[T] | None:
        """The items of ``text`` when it is ``entry``'s elements and more; else None."""
        prefix = entry.prefix
        if len(text) <= len(prefix) or not text.startswith(prefix):
            return None
        rest = text[len(prefix) :].lstrip(JSON_SPACE)
        if rest[:1] == "]":
            return list(entry.items) if not rest[1:].strip(JSON_SPACE) else None
        if rest[:1] != ",":
            return None
        try:
            tail = json_array("[" + rest[1:])
        except ValueError:
            return None
        if not tail:  # "[a,]" is no array, though "[]" is
            return None
        return [*entry.items, *convert(tail)]

    def _keep(self, key: Hashable, text: str, items: Sequence[T]) -> None:
        prefix = text.rstrip(JSON_SPACE)[:-1].rstrip(JSON_SPACE)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._chars -= len(old.prefix)
            if not items or len(prefix) > self.max_chars:
                return
            self._entries[key] = _Entry(prefix, tuple(items))
            self._chars += len(prefix)
            while self._chars > self.max_chars:
                _, evicted = self._entries.popitem(last=False)
                self._chars -= len(evicted.prefix)


#: The collector process's: derivation of every span shares it.
SHARED = ParsedPrefixes()
