"""Where spilled results live: the :class:`SpillStore` protocol, the local
:class:`DirectorySpillStore`, and the default store that
:func:`~ctxledger.remedies.spill.spill` and :func:`~ctxledger.remedies.spill.fetch` use."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

#: Environment variable naming the default store's directory.
SPILL_DIR_ENV = "CTXLEDGER_SPILL_DIR"
#: How long a spilled result stays readable after its last write, by default (a day).
DEFAULT_TTL_S = 86400.0
#: The refs :class:`DirectorySpillStore` hands out (and the only ones it accepts).
REF_PATTERN = r"spill_[0-9a-f]{16}"

_REF = re.compile(REF_PATTERN)
_SUFFIX = ".txt"
_TMP_PREFIX = ".tmp-spill-"


class InvalidRefError(ValueError):
    """A ref that is not one a store hands out (e.g. an attempt at path traversal)."""


@runtime_checkable
class SpillStore(Protocol):
    """Where spilled results live. Any object with these four methods works."""

    def put(self, text: str) -> str:
        """Store ``text`` whole and return its ref."""
        ...

    def get(self, ref: str) -> str | None:
        """The text stored under ``ref``; None when it expired or never existed."""
        ...

    def delete(self, ref: str) -> None:
        """Forget ``ref`` (no error when it is already gone)."""
        ...

    def sweep(self, now: float | None = None) -> int:
        """Remove what has expired at ``now`` (default: the current time); return how
        many refs were removed."""
        ...


def default_spill_dir() -> Path:
    """``$CTXLEDGER_SPILL_DIR``, else a ``ctxledger-spill`` folder in the temp dir."""
    configured = os.environ.get(SPILL_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(tempfile.gettempdir()) / "ctxledger-spill"


class DirectorySpillStore:
    """A local directory of spilled results.

    Refs are content addressed (``spill_`` + the first 16 hex digits of the UTF-8
    text's SHA-256), so storing the same result twice yields the same ref and refreshes
    its time to live. Writes are atomic (a temp file in the same directory, then a
    rename); files are private to the user. A ref expires ``ttl_s`` seconds after its
    last write (None: never); with ``max_bytes`` the oldest refs are evicted once the
    store grows past it (the ref just written is always kept). Expired refs are swept
    on every ``put`` and never returned by ``get``. Refs that do not match
    :data:`REF_PATTERN` are rejected with :class:`InvalidRefError`, so no ref can name a
    file outside the directory.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        ttl_s: float | None = DEFAULT_TTL_S,
        max_bytes: int | None = None,
    ) -> None:
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive or None, got {ttl_s!r}")
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive or None, got {max_bytes!r}")
        self.directory = Path(directory) if directory is not None else default_spill_dir()
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"DirectorySpillStore({str(self.directory)!r}, ttl_s={self.ttl_s!r}, "
            f"max_bytes={self.max_bytes!r})"
        )

    def path_for(self, ref: str) -> Path:
        """The file holding ``ref``; :class:`InvalidRefError` for anything else."""
        if not isinstance(ref, str) or not _REF.fullmatch(ref):
            raise InvalidRefError(
                f"invalid spill ref {ref!r}: expected 'spill_' followed by 16 lower-case "
                "hex digits, exactly as the spill marker gives it"
            )
        return self.directory / (ref + _SUFFIX)

    def put(self, text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        ref = "spill_" + hashlib.sha256(data).hexdigest()[:16]
        target = self.path_for(ref)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._sweep(time.time(), keep=target.name)
        return ref

    def get(self, ref: str) -> str | None:
        path = self.path_for(ref)
        try:
            if self._expired(path.stat().st_mtime, time.time()):
                path.unlink(missing_ok=True)
                return None
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return data.decode("utf-8", "surrogatepass")

    def delete(self, ref: str) -> None:
        self.path_for(ref).unlink(missing_ok=True)

    def sweep(self, now: float | None = None) -> int:
        return self._sweep(time.time() if now is None else now, keep=None)

    def _expired(self, mtime: float, now: float) -> bool:
        return self.ttl_s is not None and mtime + self.ttl_s <= now

    def _entries(self) -> list[tuple[float, str, int]]:
        """(mtime, file name, size) of every stored ref."""
        entries: list[tuple[float, str, int]] = []
        try:
            scan = os.scandir(self.directory)
        except FileNotFoundError:
            return entries
        with scan:
            for entry in scan:
                name = entry.name
                if not name.endswith(_SUFFIX) or not _REF.fullmatch(name[: -len(_SUFFIX)]):
                    continue
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue
                entries.append((stat.st_mtime, name, stat.st_size))
        return entries

    def _remove(self, name: str) -> bool:
        try:
            (self.directory / name).unlink()
        except FileNotFoundError:
            return False
        return True

    def _sweep(self, now: float, keep: str | None) -> int:
        with self._lock:
            removed = 0
            alive: list[tuple[float, str, int]] = []
            for mtime, name, size in self._entries():
                if name != keep and self._expired(mtime, now):
                    removed += self._remove(name)
                else:
                    alive.append((mtime, name, size))
            if self.max_bytes is not None:
                total = sum(size for _, _, size in alive)
                for _, name, size in sorted(alive):  # oldest first
                    if total <= self.max_bytes:
                        break
                    if name == keep:
                        continue
                    removed += self._remove(name)
                    total -= size
            return removed


_DEFAULT_STORES: dict[Path, DirectorySpillStore] = {}
_DEFAULT_LOCK = threading.Lock()


def default_store() -> DirectorySpillStore:
    """The store ``spill`` and ``fetch`` use when given none: one
    :class:`DirectorySpillStore` per :func:`default_spill_dir` (read at each call)."""
    directory = default_spill_dir()
    with _DEFAULT_LOCK:
        store = _DEFAULT_STORES.get(directory)
        if store is None:
            store = _DEFAULT_STORES[directory] = DirectorySpillStore(directory)
        return store
