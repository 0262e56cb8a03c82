"""Lists of strings (item ids, field names, a request's tool call ids) stored once each.

The four stages of one tool result usually carry the same item ids and field names, and
every result of a tool the same field names: each distinct list is kept once in
``string_lists`` under a 128-bit digest of its JSON text, and rows refer to it by that
digest. Writing needs no lookup (the digest is computed, the list inserted if new);
reading resolves many digests in one query.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence

import orjson
from sqlalchemy import Connection

from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import STRING_LISTS

STRING_LIST_COLUMNS = ("digest", "items")
StoredLists = Mapping[bytes, tuple[str, ...]]


class _KnownLists:
    """Lists by digest, as this process wrote or read them: a digest names one list in
    every database, so a long run's manifests (each listing every result before it) are
    read back without their lists being fetched and parsed again. Bounded by the items
    held, the least recently used given up first. Thread-safe."""

    def __init__(self, max_items: int = 2_000_000) -> None:
        self.max_items = max_items
        self._lists: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()
        self._items = 0
        self._lock = threading.Lock()

    def get_many(self, digests: Collection[bytes]) -> dict[bytes, tuple[str, ...]]:
        with self._lock:
            found = {d: items for d in digests if (items := self._lists.get(d)) is not None}
            for digest in found:
                self._lists.move_to_end(digest)
            return found

    def forget_all(self) -> None:
        with self._lock:
            self._lists.clear()
            self._items = 0

    def put(self, digest: bytes, items: tuple[str, ...]) -> None:
        if len(items) > self.max_items:
            return
        with self._lock:
            if digest in self._lists:
                self._lists.move_to_end(digest)
                return
            self._lists[digest] = items
            self._items += len(items)
            while self._items > self.max_items:
                _, evicted = self._lists.popitem(last=False)
                self._items -= len(evicted)


KNOWN_LISTS = _KnownLists()
_PLAIN = {str}


class ListWriter:
    """The lists a batch refers to, to store with it."""

    def __init__(self) -> None:
        self.texts: dict[bytes, str] = {}

    def ref(self, values: Sequence[str] | None) -> bytes | None:
        """The digest a row stores for ``values`` (None stays NULL)."""
        if values is None:
            return None
        items = tuple(values)
        data = orjson.dumps(items)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest not in self.texts:
            self.texts[digest] = data.decode()
            if set(map(type, items)) <= _PLAIN:  # what reading it back would give
                KNOWN_LISTS.put(digest, items)
        return digest

    def store(self, connection: Connection, sql: Statements) -> None:
        """Insert the lists referred to since the last call and not stored yet (a stored
        list is never rewritten)."""
        rows = sorted(self.texts.items())
        if rows:
            sql.insert_new(connection, STRING_LISTS, STRING_LIST_COLUMNS, ("digest",), rows)
        self.texts.clear()


def list_refs(rows: Sequence[Sequence[object]], *indexes: int) -> set[bytes]:
    """The list digests ``rows`` refer to in the columns at ``indexes``."""
    return {
        bytes(d) for row in rows for i in indexes if isinstance(d := row[i], (bytes, memoryview))
    }


def read_lists(connection: Connection, sql: Statements, digests: Collection[bytes]) -> StoredLists:
    """The lists of many digests: those this process knows, and the others in one query."""
    wanted = {d for d in digests if d is not None}
    found = KNOWN_LISTS.get_many(wanted)
    keys = sorted((d,) for d in wanted if d not in found)
    if keys:
        rows = sql.select_keys(connection, STRING_LISTS, STRING_LIST_COLUMNS, ("digest",), keys)
        for digest, text in rows:
            items = found[bytes(digest)] = tuple(orjson.loads(text))
            KNOWN_LISTS.put(bytes(digest), items)
    return found
