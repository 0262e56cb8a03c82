"""Spill and fetch (seed 003): a tool result over budget is stored whole, the model gets
a preview plus a reference, and a companion ``fetch_result`` tool reads slices back.

:func:`spill` returns a :class:`Spilled` whose ``declaration()`` is what
:func:`ctxledger.measure` needs for the ``serialized`` stage, so the auditor sees a
``declared`` loss, never a silent one. The preview ends with a visible
``[ctxledger: spilled …]`` marker that states the total, what is shown, the ref and how
to read more; for record lists it also lists the ids of every record, so each one stays
retrievable even when the preview is small.

Stores are pluggable (:class:`SpillStore`); :class:`DirectorySpillStore` is the local
default (:mod:`ctxledger.remedies.spill_store`). Text is cut on grapheme boundaries
(:mod:`ctxledger.remedies.graphemes`), never inside a code point, an emoji sequence or a
combining sequence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS
from ctxledger._serialize import to_text
from ctxledger.remedies.graphemes import grapheme_bounds
from ctxledger.remedies.record_ids import ids_part, record_ids
from ctxledger.remedies.spill_store import (
    DEFAULT_TTL_S,
    REF_PATTERN,
    SPILL_DIR_ENV,
    DirectorySpillStore,
    InvalidRefError,
    SpillStore,
    default_spill_dir,
    default_store,
)

#: How many chars a fetch reads unless told otherwise.
DEFAULT_FETCH_LENGTH = 4000


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
    records = record_ids(text, item_keys, id_fields)
    for short in (False, True):
        # Sized with shown = total: the real marker can only be shorter.
        avail = budget_chars - len(_marker(how_to_fetch, ref, total, total, "", short))
        if avail < 0:
            continue
        ids, listed = "", 0
        if records is not None and not short:
            half = avail // 2
            floor = half if preview_chars is None else min(preview_chars, half)
            ids, listed = ids_part(records[0], records[1], avail, avail - floor)
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
