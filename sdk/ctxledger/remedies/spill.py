"""Spill and fetch (seed 003): a tool result over budget is stored whole, the model gets
a preview plus a reference, and a companion ``fetch_result`` tool reads slices back.

:func:`spill` returns a :class:`Spilled` whose ``declaration()`` is what
:func:`ctxledger.measure` needs for the ``serialized`` stage, so the auditor sees a
``declared`` loss, never a silent one. The preview ends with a visible
``[ctxledger: spilled …]`` marker that states the total, what is shown, the ref and how
to read more; for record lists it also lists the ids of every record, so each one stays
retrievable even when the preview is small.

Stores are pluggable (:class:`SpillStore`); :class:`DirectorySpillStore` is the local
default. Text is cut on grapheme boundaries (``regex``'s ``\\X``; ``regex`` comes with
tiktoken), never inside a code point, an emoji sequence or a combining sequence.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, runtime_checkable

from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS, find_item_list, item_id
from ctxledger._serialize import to_text
from ctxledger.remedies.graphemes import grapheme_bounds

#: Environment variable naming the default store's directory.
SPILL_DIR_ENV = "CTXLEDGER_SPILL_DIR"
#: How many chars a fetch reads unless told otherwise.
DEFAULT_FETCH_LENGTH = 4000
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
    """The store :func:`spill` and :func:`fetch` use when given none: one
    :class:`DirectorySpillStore` per :func:`default_spill_dir` (read at each call)."""
    directory = default_spill_dir()
    with _DEFAULT_LOCK:
        store = _DEFAULT_STORES.get(directory)
        if store is None:
            store = _DEFAULT_STORES[directory] = DirectorySpillStore(directory)
        return store


# --- record ids ------------------------------------------------------------------------

_PLAIN_ID = re.compile(r"[\w.:/@+#-]+")
_NUMBERED = re.compile(r"(.*?)(\d+)")


def _records(
    text: str, item_keys: Sequence[str], id_fields: Sequence[str]
) -> tuple[int, list[str | None]] | None:
    """The record count and each record's id (None without one) of a JSON text."""
    if not text.lstrip().startswith(("[", "{")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    found = find_item_list(parsed, item_keys)
    if found is None:
        return None
    return len(found), [item_id(item, id_fields) for item in found]


def _id_token(value: str) -> str:
    if _PLAIN_ID.fullmatch(value) and ".." not in value:
        return value
    return json.dumps(value, ensure_ascii=False)


def _follows(a: str, b: str) -> bool:
    """Whether ``b`` is the id after ``a`` in a numbered run (``ord-009``, ``ord-010``)."""
    ma, mb = _NUMBERED.fullmatch(a), _NUMBERED.fullmatch(b)
    if ma is None or mb is None or ma[1] != mb[1] or int(mb[2]) != int(ma[2]) + 1:
        return False
    padded = (len(ma[2]) > 1 and ma[2][0] == "0") or (len(mb[2]) > 1 and mb[2][0] == "0")
    return len(ma[2]) == len(mb[2]) or not padded


def _id_runs(tokens: list[str]) -> list[tuple[str, int]]:
    """The tokens with runs of three or more consecutive numbered ids written
    ``first..last``, each with how many ids it stands for."""
    runs: list[tuple[str, int]] = []
    i = 0
    while i < len(tokens):
        j = i
        while j + 1 < len(tokens) and _follows(tokens[j], tokens[j + 1]):
            j += 1
        if j - i >= 2:
            runs.append((f"{tokens[i]}..{tokens[j]}", j - i + 1))
        else:
            runs.extend((token, 1) for token in tokens[i : j + 1])
        i = j + 1
    return runs


_RUN_LEGEND = " (a..b = a run of consecutive ids)"


def _ids_part(
    count: int, ids: list[str | None], full_room: int, partial_room: int
) -> tuple[str, int]:
    """The marker's record part and how many ids it lists: every id when that fits in
    ``full_room``, else as many as fit in ``partial_room``."""
    head = f"; {count:,} items"
    present = [i for i in ids if i is not None]
    if len(head) > full_room:
        return "", 0
    if not present:
        bare = head + " (without ids)"
        return (bare if len(bare) <= full_room else head), 0
    runs = _id_runs([_id_token(i) for i in present])
    ranged = any(n > 1 for _, n in runs)
    every = "all" if len(present) == count else f"the {len(present):,} that have one"
    legend = _RUN_LEGEND if ranged else ""
    full = f"{head}, ids of {every}{legend}: " + ", ".join(token for token, _ in runs)
    if len(full) <= full_room:
        return full, len(present)
    # Not all fit: the first ones, with a header sized for the largest possible count.
    intro_max = len(f"{head}, ids of the first {len(present):,}{legend}: ")
    tail = ", … (the rest are in the stored result)"
    chosen: list[tuple[str, int]] = []
    used = intro_max + len(tail)
    for token, n in runs:
        extra = len(token) + (2 if chosen else 0)
        if used + extra > partial_room:
            break
        chosen.append((token, n))
        used += extra
    if not chosen:
        return (head, 0) if len(head) <= partial_room else ("", 0)
    listed = sum(n for _, n in chosen)
    legend = _RUN_LEGEND if any(n > 1 for _, n in chosen) else ""
    text = f"{head}, ids of the first {listed:,}{legend}: "
    return text + ", ".join(token for token, _ in chosen) + tail, listed


# --- spill -----------------------------------------------------------------------------


class SpillDeclaration(TypedDict, total=False):
    """Keyword arguments for :func:`ctxledger.measure` describing a spill."""

    declared: bool
    strategy: str
    marker: bool
    ref: str


@dataclass(frozen=True)
class Spilled:
    """What :func:`spill` gives the model (``text``) and what it did.

    ``items`` is the record count of a JSON record list (None otherwise) and
    ``ids_listed`` how many of their ids the marker names.
    """

    text: str
    ref: str | None
    total_chars: int
    shown_chars: int
    spilled: bool
    items: int | None = None
    ids_listed: int = 0

    def declaration(self) -> SpillDeclaration:
        """``ctxledger.measure("serialized", spilled.text, ..., **spilled.declaration())``."""
        if not self.spilled or self.ref is None:
            return SpillDeclaration(declared=False)
        return SpillDeclaration(declared=True, strategy="spill", marker=True, ref=self.ref)


def _marker(how_to_fetch: str, ref: str, total: int, shown: int, ids: str, short: bool) -> str:
    call = f"{how_to_fetch}(ref={json.dumps(ref, ensure_ascii=False)}, offset={shown}"
    if short:
        return f"…[ctxledger: spilled — {total:,} chars, {shown:,} shown; {call})]"
    return (
        f"…[ctxledger: spilled — {total:,} chars in total, {shown:,} shown; "
        f"the whole result is stored as {ref}; "
        f"read more with {call}, length={DEFAULT_FETCH_LENGTH}){ids}]"
    )


def spill(
    value_or_text: Any,
    *,
    budget_chars: int,
    preview_chars: int | None = None,
    store: SpillStore | None = None,
    how_to_fetch: str = "fetch_result",
    item_keys: Sequence[str] = DEFAULT_ITEM_KEYS,
    id_fields: Sequence[str] = DEFAULT_ID_FIELDS,
) -> Spilled:
    """Fit a tool result into ``budget_chars`` by spilling it.

    Text (or any value, as the JSON :func:`ctxledger._serialize.to_text` gives) within
    the budget comes back unchanged. Over it, the whole text goes to ``store`` (default:
    :func:`default_store`) and the model gets the head of the text, cut on a grapheme
    boundary, then a ``[ctxledger: spilled …]`` marker with the total, the chars shown,
    the ref and the ``how_to_fetch`` call that reads on. A JSON record list (a top-level
    array, or a list under one of ``item_keys``) also gets its record count and the ids
    of all records; ids take precedence over the preview, ``preview_chars`` only caps
    it. When not every id fits, the first ones are listed and the preview keeps at least
    half the room. The returned text never exceeds ``budget_chars``; a budget too small
    for even a short marker raises ``ValueError``.
    """
    if budget_chars < 1:
        raise ValueError(f"budget_chars must be positive, got {budget_chars!r}")
    if preview_chars is not None and preview_chars < 0:
        raise ValueError(f"preview_chars must not be negative, got {preview_chars!r}")
    text = to_text(value_or_text)
    total = len(text)
    if total <= budget_chars:
        return Spilled(text=text, ref=None, total_chars=total, shown_chars=total, spilled=False)

    active = store if store is not None else default_store()
    ref = active.put(text)
    records = _records(text, item_keys, id_fields)
    for short in (False, True):
        # Sized with shown = total: the real marker can only be shorter.
        avail = budget_chars - len(_marker(how_to_fetch, ref, total, total, "", short))
        if avail < 0:
            continue
        ids, listed = "", 0
        if records is not None and not short:
            half = avail // 2
            floor = half if preview_chars is None else min(preview_chars, half)
            ids, listed = _ids_part(records[0], records[1], avail, avail - floor)
        room = avail - len(ids) - 1  # a line break between preview and marker
        if preview_chars is not None:
            room = min(room, preview_chars)
        shown = grapheme_bounds(text, max(room, 0))[0]
        marker = _marker(how_to_fetch, ref, total, shown, ids, short)
        return Spilled(
            text=f"{text[:shown]}\n{marker}" if shown else marker,
            ref=ref,
            total_chars=total,
            shown_chars=shown,
            spilled=True,
            items=records[0] if records is not None else None,
            ids_listed=listed,
        )
    active.delete(ref)
    needed = len(_marker(how_to_fetch, ref, total, total, "", True))
    raise ValueError(
        f"budget_chars={budget_chars} cannot hold a spill marker ({needed} chars needed)"
    )


# --- fetch -----------------------------------------------------------------------------


def fetch(
    ref: str,
    offset: int = 0,
    length: int = DEFAULT_FETCH_LENGTH,
    *,
    store: SpillStore | None = None,
    how_to_fetch: str = "fetch_result",
) -> str:
    """Read ``length`` chars (code points) of a spilled result from ``offset``, widened
    to grapheme boundaries, followed by a ``[ctxledger: page …]`` line saying how many
    chars remain and the next offset. Made for the model: an expired, unknown or
    malformed ref gives a message to act on, not an exception."""
    active = store if store is not None else default_store()
    quoted = json.dumps(ref, ensure_ascii=False)
    try:
        text = active.get(ref)
    except ValueError as exc:
        return f"ref {quoted} is not a valid spill reference ({exc})"
    if text is None:
        return f"ref {quoted} has expired or never existed; re-run the tool to get its result"
    total = len(text)
    offset, length = max(0, int(offset)), max(1, int(length))
    if offset >= total:
        return (
            f"[ctxledger: page — offset {offset:,} is past the end of {ref} "
            f"({total:,} chars in total); nothing remains]"
        )
    start = grapheme_bounds(text, offset)[0]
    end = grapheme_bounds(text, min(total, start + length))[1]
    remaining = total - end
    where = f"chars {start:,}–{end:,} of {total:,} in {ref}"
    if remaining:
        tail = (
            f"[ctxledger: page — {where}; {remaining:,} chars remain; read on with "
            f"{how_to_fetch}(ref={quoted}, offset={end}, length={length})]"
        )
    else:
        tail = f"[ctxledger: page — {where}; this is the end, nothing remains]"
    return f"{text[start:end]}\n{tail}"


def fetch_tool_schema(name: str = "fetch_result") -> dict[str, Any]:
    """An OpenAI-style function tool definition for :func:`fetch` to register with an
    agent (``name`` must match the ``how_to_fetch`` given to :func:`spill`)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                "Read part of a tool result that was too large for the context and was "
                "stored whole. Its preview ends with a '[ctxledger: spilled …]' marker "
                "giving the ref and the offset to continue from. Returns the slice and a "
                "line with how many chars remain and the next offset."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "ref": {
                        "type": "string",
                        "description": "The ref from the spill marker, e.g. spill_0123abcd….",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "default": 0,
                        "description": "Where to start reading, in characters.",
                    },
                    "length": {
                        "type": "integer",
                        "minimum": 1,
                        "default": DEFAULT_FETCH_LENGTH,
                        "description": "How many characters to read.",
                    },
                },
                "required": ["ref"],
                "additionalProperties": False,
            },
        },
    }


__all__ = [
    "DEFAULT_FETCH_LENGTH",
    "DEFAULT_TTL_S",
    "REF_PATTERN",
    "SPILL_DIR_ENV",
    "DirectorySpillStore",
    "InvalidRefError",
    "SpillDeclaration",
    "SpillStore",
    "Spilled",
    "default_spill_dir",
    "default_store",
    "fetch",
    "fetch_tool_schema",
    "grapheme_bounds",
    "spill",
]
