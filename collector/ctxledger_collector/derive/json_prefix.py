"""The complete elements at the start of a JSON array that was cut off: what a span's
messages still show when an attribute length limit sliced them (the opening names the
conversation even when the rest is gone)."""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


def complete_elements(text: str) -> list[Any]:
    """The elements of ``text`` (a JSON array, possibly cut anywhere) that are whole."""
    index = len(text) - len(text.lstrip(_SPACE))
    if text[index : index + 1] != "[":
        return []
    index += 1
    found: list[Any] = []
    while True:
        while index < len(text) and text[index] in _SPACE + ",":
            index += 1
        if index >= len(text) or text[index] == "]":
            return found
        try:
            element, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return found
        found.append(element)
