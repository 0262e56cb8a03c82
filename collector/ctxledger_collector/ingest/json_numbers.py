"""JSON read leniently for the salvage of an export: a number no span can hold (past a
double's range, ``NaN``, a bare integer of more than 100 digits) is marked where it
stands instead of failing the whole document, so the item holding it is rejected alone."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

_BAD_NUMBER = "a number no span can hold (past a double's range, NaN, or thousands of digits)"
#: Digits of the longest integer read as a number (OTLP's 64-bit ones need 20).
_MAX_DIGITS = 100


class _Unreadable:
    """Stands in the document for a number no span can hold."""


_UNREADABLE = _Unreadable()


def _number(text: str) -> Any:
    value = float(text)
    return _UNREADABLE if math.isinf(value) or math.isnan(value) else value


def _integer(text: str) -> Any:
    return _UNREADABLE if len(text.lstrip("-")) > _MAX_DIGITS else int(text)


def _flag_unreadable(value: Any) -> None:
    if value is _UNREADABLE:
        raise _UnreadableFound
    raise TypeError(f"{type(value).__name__} is not JSON")


class _UnreadableFound(Exception):
    pass


def json_problem(value: Any, bad_text: str) -> str | None:
    """Why ``value`` cannot be read as OTLP JSON (``bad_text``: a lone surrogate inside),
    or None."""
    try:
        orjson.dumps(value, default=_flag_unreadable)
    except TypeError as error:  # orjson.JSONEncodeError
        found = isinstance(error.__cause__, _UnreadableFound)
        return _BAD_NUMBER if found else bad_text
    return None


def lenient_loads(text: str) -> Any:
    """``text`` parsed, each number no span can hold marked (see :func:`json_problem`)."""
    return json.loads(
        text,
        parse_float=_number,
        parse_int=_integer,
        parse_constant=lambda _name: _UNREADABLE,
    )
