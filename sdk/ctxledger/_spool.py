"""The on-disk spool: export request bodies the collector could not take yet, one file
per batch, kept across process restarts and sent oldest first.

* A file is written atomically (a hidden temporary file, fsync, rename, fsync of the
  directory), so a crash leaves either the whole batch or nothing.
* Names sort oldest first: ``<time_ns>-<pid>-<token>-<seq>-<spans>.otlp``.
* A process claims a file by renaming it to ``<name>.claim-<pid>-<token>``; a rename
  succeeds once, so processes sharing a directory never send one file twice. A claim
  whose process is gone (or older than ``stale_after_s``) is renamed back.
* The directory holds at most ``max_bytes`` (about: processes writing at the same
  moment may pass it by a batch); to make room the oldest unclaimed files are deleted,
  and their spans counted as ``spool_dropped``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

logger = logging.getLogger("ctxledger")

_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
SUFFIX = ".otlp"
CLAIM = ".claim-"
TMP_PREFIX = ".tmp-"


class SpoolCounter(Protocol):
    """Where the spool counts what it kept (``spans_spooled``) and dropped (``spool_dropped``)."""

    def add(self, name: str, amount: int = 1) -> None: ...


@dataclass(frozen=True)
class Claim:
    """A batch taken out of a store to be sent: delete it when done, release it to retry."""

    name: str
    spans: int
    path: Path | None = None
    """Where the claimed file is (disk spool)."""
    body: bytes | None = None
    """The body itself (memory store)."""


@dataclass(frozen=True)
class _Entry:
    name: str
    size: int
    mtime: float


def spans_in(name: str) -> int:
    """The span count a spool file name carries (0 if it carries none)."""
    stem = name.split(CLAIM, 1)[0].removesuffix(SUFFIX)
    count = stem.rsplit("-", 1)[-1]
    return int(count) if count.isdigit() else 0


def pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill would terminate it there: rely on the claim's age
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: alive
        return True
    return True


def _fsync_directory(path: Path) -> None:
    if os.name == "nt":  # directories cannot be opened for fsync there
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DiskSpool:
    """A bounded directory of export request bodies, shared safely between processes."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        counter: SpoolCounter,
        stale_after_s: float = 600.0,
        fallback: str = "batches wait in memory instead",
        label: tuple[str, bytes] | None = None,
    ) -> None:
        self.directory = directory
        self._label = label
        """A file (name, content) written beside the batches when the folder is made."""
        self._fallback = fallback
        self.max_bytes = max_bytes
        self._counter = counter
        self._stale_after_s = stale_after_s
        self._pid = os.getpid()
        self._token = secrets.token_hex(4)
        self._owner = f"{self._pid}-{self._token}"
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._mine: set[str] = set()
        self._failures_logged: set[str] = set()

    # --- listing ---------------------------------------------------------------------

    def _scan(self) -> list[_Entry]:
        """Every spool file (claimed or not), temporary files excepted, oldest first."""
        entries: list[_Entry] = []
        try:
            with os.scandir(self.directory) as listing:
                for item in listing:
                    if item.name.startswith(TMP_PREFIX) or SUFFIX not in item.name:
                        continue
                    try:
                        stat = item.stat()
                    except FileNotFoundError:  # claimed or sent meanwhile
                        continue
                    entries.append(_Entry(item.name, stat.st_size, stat.st_mtime))
        except FileNotFoundError:
            return []
        except OSError as error:  # not a folder, no permission: nothing can be read there
            self._log_failure_once("list", error)
            return []
        entries.sort(key=lambda e: e.name)
        return entries

    def has_backlog(self) -> bool:
        """Whether an unclaimed file waits (from this process or any other)."""
        return any(CLAIM not in e.name for e in self._scan())

    def pending(self) -> tuple[int, int]:
        """Spans and bytes the spool holds, claimed files included."""
        _files, spans, size = self.usage()
        return spans, size

    def usage(self) -> tuple[int, int, int]:
        """Files, spans and bytes the spool holds, claimed files included."""
        entries = self._scan()
        return len(entries), sum(spans_in(e.name) for e in entries), sum(e.size for e in entries)

    # --- writing ---------------------------------------------------------------------

    def _log_failure_once(self, what: str, error: OSError) -> None:
        if what not in self._failures_logged:
            self._failures_logged.add(what)
            logger.warning(
                "ctxledger: cannot %s the spool %s (%s); %s (logged once)",
                what,
                self.directory,
                error,
                self._fallback,
            )

    def _make_room(self, size: int) -> bool:
        """Delete the oldest unclaimed files until ``size`` more bytes fit."""
        if size > self.max_bytes:
            return False
        entries = self._scan()
        total = sum(e.size for e in entries)
        for entry in entries:
            if total + size <= self.max_bytes:
                break
            if CLAIM in entry.name:
                continue
            try:
                os.unlink(self.directory / entry.name)
            except FileNotFoundError:  # another process claimed or dropped it
                continue
            total -= entry.size
            self._counter.add("spool_dropped", spans_in(entry.name))
        return total + size <= self.max_bytes

    def put(self, body: bytes, spans: int) -> bool:
        """Keep ``body`` for later, dropping the oldest files if there is no room (or this
        batch, if it alone is over the limit). False only when the spool cannot be
        written at all: the caller keeps the batch elsewhere."""
        with self._lock:
            if not self._make_directory():
                return False
            if not self._make_room(len(body)):
                self._counter.add("spool_dropped", spans)
                return True
            if not self._write(body, spans):
                return False
        self._counter.add("spans_spooled", spans)
        return True

    def offer(self, body: bytes, spans: int) -> str:
        """Keep ``body`` only if it fits without dropping anything: ``"kept"`` (on disk,
        fsynced), ``"full"`` (no room: nothing was written or deleted) or ``"failed"``
        (the spool cannot be written)."""
        with self._lock:
            if not self._make_directory():
                return "failed"
            if self.usage()[2] + len(body) > self.max_bytes:
                return "full"
            if not self._write(body, spans):
                return "failed"
        self._counter.add("spans_spooled", spans)
        return "kept"

    def _make_directory(self) -> bool:
        try:  # only this user may read what waits (ids, hashes, captured content)
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            self._log_failure_once("create", error)
            return False
        if self._label is not None:
            self._write_label(*self._label)
        return True

    def _write_label(self, name: str, content: bytes) -> None:
        """The folder's label, once (atomically: a reader sees all of it or none)."""
        target = self.directory / name
        if target.exists():
            return
        tmp = self.directory / f"{TMP_PREFIX}{self._owner}-label"
        try:
            tmp.write_bytes(content)
            os.replace(tmp, target)
        except OSError as error:  # the batches matter more than their label
            tmp.unlink(missing_ok=True)
            if "label" not in self._failures_logged:
                self._failures_logged.add("label")
                logger.warning("ctxledger: cannot write %s (%s) (logged once)", target, error)

    def _write(self, body: bytes, spans: int) -> bool:
        """One file, atomically: a temporary file, fsync, rename, fsync of the folder."""
        seq = next(self._seq)
        name = f"{time.time_ns():020d}-{self._owner}-{seq:08d}-{spans}{SUFFIX}"
        tmp = self.directory / f"{TMP_PREFIX}{self._owner}-{seq:08d}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(body)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, self.directory / name)
            _fsync_directory(self.directory)
        except OSError as error:
            tmp.unlink(missing_ok=True)
            self._log_failure_once("write to", error)
            return False
        return True

    # --- sending ---------------------------------------------------------------------

    def claim(self) -> Claim | None:
        """The oldest unclaimed file, claimed for this process; None when there is none."""
        for entry in self._scan():
            if CLAIM in entry.name:
                continue
            claimed = f"{entry.name}{CLAIM}{self._owner}"
            try:
                os.rename(self.directory / entry.name, self.directory / claimed)
            except FileNotFoundError:  # another process was first
                continue
            except OSError as error:
                self._log_failure_once("claim a file in", error)
                return None
            with self._lock:
                self._mine.add(claimed)
            with contextlib.suppress(OSError):  # the claim's age starts now (recover_stale)
                os.utime(self.directory / claimed)
            return Claim(entry.name, spans_in(entry.name), path=self.directory / claimed)
        return None

    def read(self, claim: Claim) -> bytes | None:
        assert claim.path is not None
        try:
            return claim.path.read_bytes()
        except OSError as error:
            self._log_failure_once("read", error)
            return None

    def done(self, claim: Claim) -> None:
        """The claimed file was sent (or refused for good): delete it."""
        assert claim.path is not None
        claim.path.unlink(missing_ok=True)
        with self._lock:
            self._mine.discard(claim.path.name)

    def release(self, claim: Claim) -> None:
        """The claimed file could not be sent now: back under its own name, in order."""
        assert claim.path is not None
        with contextlib.suppress(OSError):  # recovered meanwhile as stale: back already
            os.rename(claim.path, self.directory / claim.name)
        with self._lock:
            self._mine.discard(claim.path.name)

    # --- what other processes left ---------------------------------------------------

    def _stale(self, owner: str, age_s: float) -> bool:
        pid_text, _, token = owner.partition("-")
        if token == self._token:
            return False  # ours: held by this process, or being written
        if age_s > self._stale_after_s or not pid_text.isdigit():
            return True
        pid = int(pid_text)
        # The same pid with another token is an earlier process (e.g. pid 1 in a container).
        return pid == self._pid or not pid_alive(pid)

    def recover_stale(self) -> None:
        """Put back files claimed by processes that are gone; delete their temporary files."""
        now = time.time()
        try:
            listing = list(os.scandir(self.directory))
        except OSError:  # no folder yet (or none that can be read: put says so)
            return
        for item in listing:
            try:
                age_s = now - item.stat().st_mtime
            except FileNotFoundError:
                continue
            if item.name.startswith(TMP_PREFIX):
                owner = item.name[len(TMP_PREFIX) :].rsplit("-", 1)[0]
                if self._stale(owner, age_s):
                    Path(item.path).unlink(missing_ok=True)
            elif CLAIM in item.name:
                original, owner = item.name.split(CLAIM, 1)
                with self._lock:
                    mine = item.name in self._mine
                if not mine and self._stale(owner, age_s):
                    with contextlib.suppress(OSError):  # another process was first
                        os.rename(item.path, self.directory / original)
