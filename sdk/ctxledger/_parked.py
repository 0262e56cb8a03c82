"""What waits in the spool, folder by folder, and dropping it: for the note the SDK prints
at exit and for ``ctxledger spool list`` / ``ctxledger spool drop``.

The spool's root holds a folder per service (by default) and in it a folder per
destination (see :mod:`ctxledger._destination`); a folder of batches without a
``destination.json`` was written by a ctxledger that did not yet tell destinations apart,
and its batches are never sent by this one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxledger._destination import DESTINATION_FILE
from ctxledger._settings import SPOOL_OFF, user_cache_dir
from ctxledger._spool import CLAIM, SUFFIX, TMP_PREFIX, pid_alive, spans_in

#: How deep under the root batches are looked for: ``<service>/<destination>/``.
_DEPTH = 2


@dataclass(frozen=True)
class ParkedBatches:
    folder: Path
    url: str | None
    """Where the batches go; None when the folder does not say (an earlier ctxledger)."""
    service_name: str | None
    files: int
    spans: int
    size: int
    oldest_ns: int | None
    """When the oldest batch was written (ns since the epoch)."""


def spool_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The folder that holds the spool's folders: ``CTXLEDGER_SPOOL_DIR``, else
    ``<user cache>/ctxledger/spool``; None when the spool is turned off."""
    env = os.environ if env is None else env
    raw = env.get("CTXLEDGER_SPOOL_DIR", "").strip()
    if raw.lower() in SPOOL_OFF:
        return None
    return Path(os.path.expanduser(raw)) if raw else user_cache_dir(env) / "spool"


def _batch_names(folder: Path) -> list[str]:
    try:
        return sorted(
            entry.name
            for entry in os.scandir(folder)
            if entry.is_file() and SUFFIX in entry.name and not entry.name.startswith(TMP_PREFIX)
        )
    except OSError:
        return []


def _description(folder: Path) -> dict[str, object]:
    try:
        loaded = json.loads((folder / DESTINATION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _written_ns(name: str) -> int | None:
    stamp = name.split("-", 1)[0]
    return int(stamp) if stamp.isdigit() else None


def parked_in(folder: Path) -> ParkedBatches | None:
    """What waits in one folder (claimed batches too), or None when nothing does."""
    names = _batch_names(folder)
    if not names:
        return None
    size = 0
    for name in names:
        try:
            size += (folder / name).stat().st_size
        except OSError:  # sent meanwhile
            continue
    described = _description(folder)
    url, service = described.get("url"), described.get("service_name")
    stamps = [stamp for name in names if (stamp := _written_ns(name)) is not None]
    return ParkedBatches(
        folder=folder,
        url=url if isinstance(url, str) else None,
        service_name=service if isinstance(service, str) else None,
        files=len(names),
        spans=sum(spans_in(name) for name in names),
        size=size,
        oldest_ns=min(stamps) if stamps else None,
    )


def find_parked(root: Path) -> list[ParkedBatches]:
    """Every folder under ``root`` (``root`` itself and two levels down) that holds
    batches, by folder."""
    found: list[ParkedBatches] = []
    level = [root]
    for depth in range(_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            if (parked := parked_in(folder)) is not None:
                found.append(parked)
            if depth < _DEPTH:
                try:
                    below.extend(Path(e.path) for e in os.scandir(folder) if e.is_dir())
                except OSError:
                    continue
        level = below
    return sorted(found, key=lambda p: str(p.folder))


def drop_parked(folder: Path) -> tuple[int, int]:
    """Delete the batches waiting in ``folder``, except those a live process is sending
    now: (files, spans) deleted."""
    files = spans = 0
    for name in _batch_names(folder):
        if CLAIM in name:
            owner = name.split(CLAIM, 1)[1]
            pid = owner.split("-", 1)[0]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue
        try:
            (folder / name).unlink()
        except FileNotFoundError:  # sent or dropped meanwhile
            continue
        files += 1
        spans += spans_in(name)
    return files, spans
