"""Lists of strings (item ids, field names, a request's tool call ids) stored once each.

The four stages of one tool result usually carry the same item ids and field names, and
every result of a tool the same field names: each distinct list is kept once in
``string_lists`` under a 128-bit digest of its JSON text, and rows refer to it by that
digest. Writing needs no lookup (the digest is computed, the list inserted if new);
reading resolves many digests in one query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence

import orjson
from sqlalchemy import Connection

from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import STRING_LISTS

STRING_LIST_COLUMNS = ("digest", "items")
StoredLists = Mapping[bytes, tuple[str, ...]]


class ListWriter:
    """The lists a batch refers to, to store with it."""

    def __init__(self) -> None:
        self.texts: dict[bytes, str] = {}

    def ref(self, values: Sequence[str] | None) -> bytes | None:
        """The digest a row stores for ``values`` (None stays NULL)."""
        if values is None:
            return None
        text = orjson.dumps(list(values)).decode()
        digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
        self.texts.setdefault(digest, text)
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
    """The lists of many digests, in one query."""
    keys = sorted({(d,) for d in digests if d is not None})
    rows = sql.select_keys(connection, STRING_LISTS, STRING_LIST_COLUMNS, ("digest",), keys)
    return {bytes(digest): tuple(orjson.loads(items)) for digest, items in rows}
