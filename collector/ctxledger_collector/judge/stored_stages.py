"""Stages read back from the database, kept in memory from one batch to the next.

Every request of a long run asks again for the stages of the results it carries, most
of all each call's ``original`` stage, which never changes after it arrived. A stored row
whose key and copy key (observed time, span, digest of every field) are the ones read
before is the same row, so the judge asks the database for keys and copy keys only and
builds a record only for what it has not seen. Another process writing a new copy
changes the copy key; a deleted row is not among the keys: neither is taken from here.

Bounded by entries and by the item ids and field names the records hold (a record
holding more than :data:`MAX_NAMES_PER_RECORD` is never kept): a few MB, which a collector
keeps for good, so small (a 200-step run asks for 200 calls' stages).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

from ctxledger.verdicts import Measurement

MAX_RECORDS: Final = 10_000
MAX_NAMES: Final = 100_000
MAX_NAMES_PER_RECORD: Final = 2_000

#: (measurement key, copy key)
RowKey = tuple[tuple[Any, ...], tuple[Any, ...]]


def _names(m: Measurement) -> int:
    return len(m.item_ids or ()) + len(m.fields or ())


class StoredStages:
    """A thread-safe least-recently-used map of rows read to their records."""

    def __init__(self, max_records: int = MAX_RECORDS, max_names: int = MAX_NAMES) -> None:
        self._max_records = max_records
        self._max_names = max_names
        self._names = 0
        self._records: OrderedDict[RowKey, Measurement] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], copy: tuple[Any, ...]) -> Measurement | None:
        with self._lock:
            found = self._records.get((key, copy))
            if found is not None:
                self._records.move_to_end((key, copy))
            return found

    def put(self, key: tuple[Any, ...], copy: tuple[Any, ...], record: Measurement) -> None:
        names = _names(record)
        if names > MAX_NAMES_PER_RECORD:
            return
        with self._lock:
            old = self._records.pop((key, copy), None)
            self._names += names - (_names(old) if old is not None else 0)
            self._records[(key, copy)] = record
            while self._records and (
                len(self._records) > self._max_records or self._names > self._max_names
            ):
                _, evicted = self._records.popitem(last=False)
                self._names -= _names(evicted)

    def __len__(self) -> int:
        return len(self._records)


#: The collector process's own.
STORED_STAGES = StoredStages()
