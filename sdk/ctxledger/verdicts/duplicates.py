"""Which copy wins when two spans claim the same measurement or manifest. Pure; stdlib only.

Exporters retry and pipelines re-measure, so one key — (trace, tool call, request, stage)
for a measurement, (trace, request) for a manifest — can arrive more than once, with
different content. The copy kept is the one with the later end time (to the
microsecond), then the higher span id, then, for copies equal in both, the higher digest
of the content: the same choice from the same set of copies, whatever their order.

The rule is a triple of 64-bit integers that orders like the preference, so a database
can apply it: the collector stores the three numbers as columns and an upsert replaces
a stored row only with a greater triple; the judge keeps the copy with the greatest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, TypeVar

from ctxledger.verdicts.model import Manifest, Measurement

Copy = TypeVar("Copy", Measurement, Manifest)
CopyKey = tuple[int, int, int]

_SIGNED_OFFSET = 2**63


def observed_microseconds(observed_at: float) -> int:
    """An end time in whole microseconds (never negative)."""
    return round(max(observed_at, 0.0) * 1_000_000)


def span_number(span_id: str | None) -> int:
    """A span id as a signed 64-bit integer that sorts like the id's bytes; ids that are
    not 16 hex digits get a stable number of their own."""
    if span_id and len(span_id) == 16:
        try:
            return int(span_id, 16) - _SIGNED_OFFSET
        except ValueError:
            pass
    if not span_id:
        return -_SIGNED_OFFSET
    return _signed(hashlib.blake2b(span_id.encode(), digest_size=8).digest())


def span_id_of(number: int) -> str:
    """The 16 hex digits :func:`span_number` was made from."""
    return format(number + _SIGNED_OFFSET, "016x")


_FIELDS = {
    kind: attrgetter(*(f.name for f in dataclasses.fields(kind)))
    for kind in (Measurement, Manifest)
}


#: ``marshal``'s version 0. Later versions write an object seen twice in one value as a
#: back-reference (version 3 on) and mark interned strings (version 1 on), so equal
#: fields gave different bytes when one decoder shared or interned a string that another
#: did not (the protobuf and the JSON decoding of one span disagreed); version 0 writes
#: every value by what it is, as fast.
_MARSHAL_VERSION = 0


def content_digest(copy: Measurement | Manifest, outside: str | None = None) -> int:
    """A signed 64-bit digest of everything the copy says, equal for equal copies however
    they were decoded. Its high 32 bits digest the fields (every one a string, number,
    bool, None or tuple, serialized by value with ``marshal``); its low 32 bits digest
    what a store keeps of the copy beyond them (``outside``: the attributes outside the
    contract, as stored text). Copies that differ in the contract so order alike whether
    or not the orderer sees what lies outside it (the SDK's ledger does not), and copies
    that differ only outside it still have one winner."""
    fields = _FIELDS[type(copy)](copy)
    inside = _half_digest(fields)
    return _signed(inside + (_NOTHING_OUTSIDE if outside is None else _half_digest(outside)))


def _half_digest(value: Any) -> bytes:
    return hashlib.blake2b(marshal.dumps(value, _MARSHAL_VERSION), digest_size=4).digest()


#: The low half of a copy with nothing outside the contract (most of them), made once.
_NOTHING_OUTSIDE: bytes = _half_digest(None)


def _signed(digest: bytes) -> int:
    return int.from_bytes(digest, "big", signed=True)


def preferred_copy_key(copy: Measurement | Manifest) -> CopyKey:
    """The triple that orders the copies of one measurement or manifest: greatest wins."""
    return (
        observed_microseconds(copy.observed_at),
        span_number(copy.span_id),
        content_digest(copy),
    )


def preferred_copy(copies: Sequence[Copy]) -> Copy:
    """The copy kept of those that share a key (see the module docstring)."""
    if len(copies) == 1:
        return copies[0]  # the common case: no digest to compute
    return max(copies, key=preferred_copy_key)
