"""Readiness: can this collector store an export now? A write is tried, not assumed.

The probe commits a write that changes nothing (the migration row set to itself), so a
read-only SQLite file, a read-only PostgreSQL (a standby, ``default_transaction_read_only``)
or a database that refuses connections all answer "unavailable"; a disk with less free
space than ``ready_min_free_bytes`` under the SQLite file or the spool does too (a full
disk may still take a write that reuses freed pages). The answer is reused for
``ready_cache_s`` so that frequent health checks do not load the database, and an
ingest commit within that interval counts as a passed probe.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from ctxledger_collector.ingest.spool import IngestSpool
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.migrate import is_up_to_date


@dataclass(frozen=True)
class Readiness:
    problem: str | None
    checked_at: float


def _reason(error: SQLAlchemyError) -> str:
    detail = str(getattr(error, "orig", None) or error).strip().splitlines()
    return f"{error.__class__.__name__}: {detail[0] if detail else ''}"[:300]


def _free_bytes(path: Path) -> int | None:
    for folder in (path, *path.parents):
        if folder.exists():
            stats = os.statvfs(folder)
            return stats.f_bavail * stats.f_frsize
    return None


class ReadinessProbe:
    def __init__(self, engine: Engine, settings: Settings, spool: IngestSpool) -> None:
        self.engine = engine
        self.settings = settings
        self.spool = spool
        self._lock = threading.Lock()
        self._last: Readiness | None = None
        self._committed_at = -float("inf")
        url = make_url(settings.database_url)
        self._disks: list[Path] = []
        if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
            self._disks.append(Path(url.database).resolve().parent)
        if spool.directory is not None:
            self._disks.append(spool.directory)

    def note_commit(self) -> None:
        """Ingest committed an export: the database took a write just now."""
        self._committed_at = time.monotonic()

    def check(self) -> Readiness:
        with self._lock:  # concurrent health checks share one probe
            now = time.monotonic()
            last = self._last
            if last is not None and now - last.checked_at < self.settings.ready_cache_s:
                return last
            self._last = Readiness(self._problem(now), time.monotonic())
            return self._last

    def _problem(self, now: float) -> str | None:
        disk = self._low_disk()
        if disk:
            return disk
        if now - self._committed_at < self.settings.ready_cache_s:
            return None
        try:
            if not is_up_to_date(self.settings.database_url):
                return "database schema is not at the latest migration: run `ctxledger db upgrade`"
        except SQLAlchemyError as error:
            return f"database unreachable: {_reason(error)}"
        try:
            with self.engine.begin() as connection:
                connection.exec_driver_sql("UPDATE alembic_version SET version_num = version_num")
        except SQLAlchemyError as error:
            return f"database cannot take writes: {_reason(error)}"
        return None

    def _low_disk(self) -> str | None:
        floor = self.settings.ready_min_free_bytes
        for folder in self._disks:
            free = _free_bytes(folder)
            if free is not None and free < floor:
                return f"disk nearly full: {free} bytes free under {folder} (< {floor})"
        return None
