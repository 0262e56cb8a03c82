"""The ingest spool: exports accepted while the database cannot take them, kept on local
disk until it can, like the OpenTelemetry Collector's persistent queue.

The files are the SDK's spool format (:class:`ctxledger._spool.DiskSpool`): one file per
export, written atomically and fsynced before the export is answered 200, named so they
sort oldest first, claimed by rename so that several worker processes sharing the folder
never store one file twice, and claims of a process that died are put back. Unlike the
SDK's spool nothing is ever dropped to make room: a full spool refuses the export (503)
and the exporter retries. Each file is the body as received behind one header line
(content type and encoding), so a replay decodes it exactly as ingest would have.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from sqlalchemy.engine import make_url

from ctxledger.spool import Claim, DiskSpool, user_cache_dir

SPOOL_OFF = frozenset({"off", "none", "false", "0", "disabled"})

Offer = Literal["kept", "full", "failed", "off"]


@dataclass(frozen=True)
class SpooledExport:
    """An accepted export as it arrived: its body (still gzip if it came gzip), and
    whether it holds spans (``traces``) or log records (``logs``)."""

    body: bytes
    media: str
    gzipped: bool
    signal: Literal["traces", "logs"] = "traces"

    def encode(self) -> bytes:
        encoding = "gzip" if self.gzipped else "identity"
        # A trace export's header is as it always was, so older files replay unchanged.
        signal = "\tlogs" if self.signal == "logs" else ""
        return f"{self.media}\t{encoding}{signal}\n".encode("ascii") + self.body

    @classmethod
    def decode(cls, data: bytes) -> SpooledExport:
        """Raises ValueError on a file this module did not write."""
        header, newline, body = data.partition(b"\n")
        media, tab, rest = header.decode("ascii").partition("\t")
        encoding, _, signal = rest.partition("\t")
        if not newline or not tab or encoding not in ("gzip", "identity"):
            raise ValueError("not an ingest spool file")
        if signal not in ("", "logs"):
            raise ValueError(f"not an ingest spool file (signal {signal!r})")
        return cls(body, media, encoding == "gzip", "logs" if signal else "traces")


@dataclass(frozen=True)
class SpoolUsage:
    requests: int
    spans: int
    bytes: int


class SpoolSettings(Protocol):
    """The settings the spool reads (the collector's :class:`Settings` has them)."""

    ingest_spool_dir: str
    ingest_spool_max_bytes: int
    database_url: str


def spool_directory(settings: SpoolSettings) -> Path | None:
    """The spool folder the settings ask for; None when the spool is off.

    By default a SQLite database keeps its spool beside the file (``<file>-spool``) and
    a PostgreSQL database under the user's cache folder, one folder per server and
    database, so a spool is only ever replayed into the database it was accepted for.
    """
    raw = settings.ingest_spool_dir.strip()
    if raw.lower() in SPOOL_OFF or settings.ingest_spool_max_bytes == 0:
        return None
    if raw:
        return Path(raw).expanduser().resolve()
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(f"{Path(url.database).resolve()}-spool")
    key = f"{url.get_backend_name()}-{url.host or 'local'}-{url.port or ''}-{url.database or ''}"
    return user_cache_dir(os.environ) / "collector-spool" / re.sub(r"[^A-Za-z0-9._-]", "_", key)


class _NoCounts:
    """The collector counts spooled exports in its own metrics, not the SDK's stats."""

    def add(self, name: str, amount: int = 1) -> None:
        pass


class IngestSpool:
    """The spool of one collector process (a folder several processes may share)."""

    def __init__(self, directory: Path | None, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._disk = (
            DiskSpool(
                directory, max_bytes, _NoCounts(), fallback="exports are answered 503 instead"
            )
            if directory is not None
            else None
        )

    @classmethod
    def from_settings(cls, settings: SpoolSettings) -> IngestSpool:
        return cls(spool_directory(settings), settings.ingest_spool_max_bytes)

    @property
    def enabled(self) -> bool:
        return self._disk is not None

    def has_backlog(self) -> bool:
        """Whether an export waits unclaimed (from this process or another)."""
        return self._disk is not None and self._disk.has_backlog()

    def offer(self, export: SpooledExport, spans: int) -> Offer:
        """Keep the export on disk (fsynced) if it fits; nothing is dropped for it."""
        if self._disk is None:
            return "off"
        outcome = self._disk.offer(export.encode(), spans)
        return "kept" if outcome == "kept" else "full" if outcome == "full" else "failed"

    def usage(self) -> SpoolUsage:
        if self._disk is None:
            return SpoolUsage(0, 0, 0)
        return SpoolUsage(*self._disk.usage())

    def claim(self) -> Claim | None:
        return self._disk.claim() if self._disk is not None else None

    def read(self, claim: Claim) -> bytes | None:
        assert self._disk is not None
        return self._disk.read(claim)

    def done(self, claim: Claim) -> None:
        assert self._disk is not None
        self._disk.done(claim)

    def release(self, claim: Claim) -> None:
        assert self._disk is not None
        self._disk.release(claim)

    def recover_stale(self) -> None:
        if self._disk is not None:
            self._disk.recover_stale()
