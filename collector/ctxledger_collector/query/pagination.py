"""Keyset pagination: a page starts after the last row of the previous one, named by an
opaque cursor, so reading page n costs what reading page 1 does (an offset makes the
database walk every row before it) and rows inserted meanwhile never shift a page.

A cursor is the sort key of the last row sent, as URL-safe base64 of a JSON array
headed by the ordering it belongs to. Clients pass back ``next_cursor`` as ``after``
and never look inside.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import ColumnElement, tuple_

#: The orderings and the type of each value of their sort keys.
ORDERINGS: dict[str, tuple[type, ...]] = {
    "recent": (float, int),  # reports: last observed, row id
    "pipeline": (bool, int, str, str),  # one run's reports: has a step, step, request, call
    "runs": (float, int),  # runs: last seen, id
}


class InvalidCursor(ValueError):
    """A cursor this API did not make, or made for another ordering."""


@dataclass(frozen=True)
class Page:
    limit: int = 100
    offset: int = 0
    after: str | None = None


def encode(ordering: str, key: Sequence[Any]) -> str:
    data = orjson.dumps([ordering, *key])
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _typed(value: Any, kind: type) -> Any:
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is bool and isinstance(value, bool):
        return value
    if kind in (int, str) and type(value) is kind:
        return value
    raise InvalidCursor(f"a cursor value is not a {kind.__name__}")


def decode(ordering: str, cursor: str) -> list[Any]:
    """The sort key a cursor of ``ordering`` holds."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeEncodeError) as error:
        raise InvalidCursor("not a cursor of this API") from error
    kinds = ORDERINGS[ordering]
    if not isinstance(data, list) or not data or data[0] != ordering:
        raise InvalidCursor(f"not a cursor of this list (its order is {ordering})")
    if len(data) != len(kinds) + 1:
        raise InvalidCursor("a cursor of another shape")
    return [_typed(value, kind) for value, kind in zip(data[1:], kinds, strict=True)]


def after(
    sort_key: Sequence[ColumnElement[Any]], values: Sequence[Any], descending: bool
) -> ColumnElement[bool]:
    """Rows strictly past ``values`` in the order of ``sort_key`` (one direction for
    every column, so the row comparison can walk one index)."""
    row, bound = tuple_(*sort_key), tuple_(*values)
    return row < bound if descending else row > bound
