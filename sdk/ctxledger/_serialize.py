"""Turn any Python value a tool may return into the text that would carry it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any


def plain_value(value: Any) -> Any:
    """A JSON-compatible stand-in for values json cannot encode by itself."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # pydantic v2
        return model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def to_text(value: Any) -> str:
    """The text form of a tool result: strings as they are, bytes decoded as UTF-8,
    everything else as JSON without ASCII escaping (dataclasses and pydantic models
    included)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return json.dumps(
        plain_value(value) if _needs_plain(value) else value,
        ensure_ascii=False,
        default=plain_value,
    )


def _needs_plain(value: Any) -> bool:
    return not isinstance(value, (dict, list, int, float, bool, type(None)))
