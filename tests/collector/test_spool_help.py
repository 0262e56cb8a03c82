"""An export that arrives while the spool holds a backlog stores the oldest waiting
exports first, once the database takes writes again, so the spool drains even when its
replayer thread falls behind a steady stream of exports (it did on a busy 2-core
machine: tests/reliability/test_sqlite_read_only_disk.py timed out 60 s after the
database came back, 325 exports spooled, a backlog of about 7 that never emptied).
Never while the database is out."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Counter

from ctxledger_collector.ingest.spool import IngestSpool, SpooledExport
from ctxledger_collector.ingest.spool_replay import SpoolReplayer, StorageUnavailable


class Metrics:
    def __init__(self) -> None:
        registry = CollectorRegistry()
        self.spool_replays = Counter("replays", "", ["outcome"], registry=registry)


class Database:
    """Where replayed exports go, in the order they are stored; out while ``down``."""

    def __init__(self) -> None:
        self.stored: list[bytes] = []
        self.down = False

    def store(self, export: SpooledExport) -> None:
        if self.down:
            raise StorageUnavailable("the database is out")
        self.stored.append(export.body)


def spooled(tmp_path: Path, count: int) -> tuple[IngestSpool, SpoolReplayer, Database]:
    spool = IngestSpool(tmp_path / "spool", max_bytes=1 << 20)
    for n in range(count):
        assert spool.offer(SpooledExport(f"export {n}".encode(), "application/json", False), 1)
    database = Database()
    return spool, SpoolReplayer(spool, database.store, Metrics()), database  # thread not started


def test_arriving_exports_drain_the_backlog_oldest_first_once_the_database_is_back(
    tmp_path: Path,
) -> None:
    spool, replayer, database = spooled(tmp_path, 5)
    assert not replayer.help_drain()  # nothing stored yet: the database may still be out
    assert database.stored == []
    assert replayer.replay_one()  # the replayer found the database back
    assert not replayer.help_drain()  # an arriving export stores two more; two wait
    assert replayer.help_drain()  # the next one stores the last two: nothing waits
    assert database.stored == [f"export {n}".encode() for n in range(5)]
    assert not spool.has_backlog()


def test_while_the_database_is_out_an_arriving_export_stores_nothing(tmp_path: Path) -> None:
    spool, replayer, database = spooled(tmp_path, 3)
    assert replayer.replay_one()
    database.down = True
    assert not replayer.help_drain()  # tried once, found it out: the export is spooled
    assert not replayer.help_drain()  # and the next tries nothing until a replay stores
    assert database.stored == [b"export 0"]
    assert spool.has_backlog()
