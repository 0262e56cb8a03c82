"""The record part of a spill marker: how many records a JSON result holds, and the id
of every one, with numbered runs written ``first..last`` so that many ids fit."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ctxledger._items import find_item_list, item_id

_PLAIN_ID = re.compile(r"[\w.:/@+#-]+")
_NUMBERED = re.compile(r"(.*?)(\d+)")


def record_ids(
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


def ids_part(
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
