"""Reading chat messages whatever they are made of, and a tool result's content as the
one text the model sees. Pure: standard library only, no I/O.

How a result's content becomes one text (:func:`content_text`):

* a string is taken verbatim (no normalisation of any kind);
* ``None`` or a missing content is ``""``;
* a list of content parts (at least one element is a mapping whose ``"type"`` is a
  known content-part type such as ``text`` or ``image``) is the *concatenation*,
  with no separator, of the ``text`` of its text parts (types ``text``,
  ``input_text``, ``output_text``). Joining with ``""`` rather than a newline is a
  deliberate choice: it adds no character that is not in a part, so the measured
  size is the sum of the parts' sizes. Other parts (images, files, documents) and
  junk elements contribute nothing. An empty list is ``""``;
* anything else (a dict, a number, a list of plain records given as content by
  mistake) is ``json.dumps(value, ensure_ascii=False)``.

Messages and blocks may be mappings or objects: objects with a ``model_dump()``
method (pydantic models such as the OpenAI / Anthropic SDK types) are dumped with
``mode="python"``; other objects are read through their attributes (``vars()`` or
dataclass fields). Nothing here raises because of an odd value.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

#: Content-part types whose ``text`` is part of what the model reads.
TEXT_PART_TYPES: Final = frozenset({"text", "input_text", "output_text"})
#: Every content-part type known to the three formats; a list with none of them is data.
PART_TYPES: Final = TEXT_PART_TYPES | frozenset(
    {
        "image",
        "image_url",
        "input_image",
        "input_audio",
        "input_file",
        "file",
        "document",
        "search_result",
        "refusal",
    }
)
RESPONSES_CALL_TYPES: Final = frozenset({"function_call", "custom_tool_call"})
RESPONSES_OUTPUT_TYPES: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def as_mapping(obj: Any) -> Mapping[str, Any] | None:
    """Return ``obj`` as a mapping, or ``None`` if it cannot be read as one. Never raises."""
    if isinstance(obj, Mapping):
        return obj
    if obj is None or isinstance(obj, (str, bytes, bytearray, int, float, list, tuple, type)):
        return None
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        try:
            dumped = model_dump(mode="python")
        except TypeError:
            try:
                dumped = model_dump()
            except Exception:
                dumped = None
        except Exception:
            dumped = None
        if isinstance(dumped, Mapping):
            return dumped
    try:
        if dataclasses.is_dataclass(obj):
            return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return dict(vars(obj))
    except Exception:
        return None


def lookup(mapping: Mapping[str, Any], key: str) -> Any:
    """``mapping.get(key)`` that tolerates broken mapping implementations."""
    try:
        return mapping.get(key)
    except Exception:
        return None


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def type_of(mapping: Mapping[str, Any] | None) -> str | None:
    """The ``"type"`` of a block or item if it is a string (safe for set membership)."""
    return None if mapping is None else str_or_none(lookup(mapping, "type"))


def usable_call_id(value: Any) -> str | None:
    """A usable tool call id: a non-empty string."""
    return value if isinstance(value, str) and value else None


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def content_text(content: Any) -> str:
    """The text the model sees for a tool result content (see the module docstring)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, (list, tuple)):
        if not content:
            return ""
        parts = [as_mapping(item) for item in content]
        if not any(type_of(p) in PART_TYPES for p in parts):
            # Plain data (e.g. a list of records) given as content by mistake.
            return _dumps(list(content))
        texts: list[str] = []
        for part in parts:
            if part is None or type_of(part) not in TEXT_PART_TYPES:
                continue
            text = lookup(part, "text")
            if isinstance(text, str):
                texts.append(text)
        return "".join(texts)
    if not isinstance(content, (int, float, bool, dict)):
        as_map = as_mapping(content)
        if as_map is not None:
            return _dumps(dict(as_map))
    return _dumps(content)


def list_items(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        yield from value
