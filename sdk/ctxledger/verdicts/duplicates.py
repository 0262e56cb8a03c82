"""Which copy wins when two spans claim the same measurement or manifest. Pure; stdlib only.

Exporters retry and pipelines re-measure, so one key — (trace, tool call, request, stage)
for a measurement, (trace, request) for a manifest — can arrive more than once, with
different content. The copy kept is the one with the later end time (to the
microsecond), then the higher span id, then, for copies equal in both, the higher digest
of the content: the same choice from the same set of copies, whatever their order.

The rule is a string that sorts like the preference, so a database can apply it: the
collector stores :func:`preferred_copy_key` in its ``pick_key`` column and upserts only
a greater key, and the judge keeps the copy with the greatest key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from ctxledger.verdicts.model import Manifest, Measurement

Copy = TypeVar("Copy", Measurement, Manifest)

#: Seconds are written with 13 integer digits, so every end time up to the largest OTLP
#: can carry (2**64 ns, about 1.8e10 s) sorts as text like a number.
_SECONDS_FORMAT = "020.6f"


def preferred_copy_key(copy: Measurement | Manifest) -> str:
    """The key that orders the copies of one measurement or manifest: greatest wins.

    ``<end time>|<span id> <content digest>``. The separator before the digest is a
    space, which sorts before every span id character, so a shorter span id that is a
    prefix of a longer one still loses, as in a plain comparison of span ids.
    """
    seconds = max(copy.observed_at, 0.0)
    digest = hashlib.blake2b(repr(copy).encode(), digest_size=8).hexdigest()
    return f"{seconds:{_SECONDS_FORMAT}}|{copy.span_id or ''} {digest}"


def preferred_copy(copies: Sequence[Copy]) -> Copy:
    """The copy kept of those that share a key (see the module docstring)."""
    if len(copies) == 1:
        return copies[0]  # the common case: no digest to compute
    return max(copies, key=preferred_copy_key)
