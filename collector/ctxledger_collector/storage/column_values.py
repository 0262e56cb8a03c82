"""Values for the columns that hold more than a scalar: JSON text (lists, documents, the
attributes outside the contract) made JSON-safe, and content digests as the signed 64-bit
prefix the database keeps. :mod:`.rows` builds the rows from them; :mod:`.stored_records`
reads digests back."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import orjson

from ctxledger.verdicts.duplicates import span_number


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN or Infinity
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def json_safe(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as JSON-storable values, at any depth: bytes become base64 text,
    NaN and infinities their names, NUL characters U+FFFD."""
    return {key: _json_value(value) for key, value in attributes.items()}


def json_text(value: Any) -> str | None:
    """A list or document as JSON text for a text column; None stays NULL."""
    if value is None:
        return None
    try:
        text: str = orjson.dumps(value).decode()
    except TypeError:  # bytes, NaN, NUL, or an int past 64 bits somewhere inside
        text = orjson.dumps(_json_value(value)).decode()
    return text


def extra_text(attributes: Mapping[str, Any], known: frozenset[str]) -> str | None:
    """The attributes outside the contract, kept as received (NULL when there are none)."""
    outside = attributes.keys() - known
    if not outside:  # the common case: an SDK span holds only contract attributes
        return None
    return json_text(json_safe({k: attributes[k] for k in sorted(outside)}))


def digest_number(digest: str | None) -> int | None:
    """A content digest as the signed 64-bit prefix the database keeps (equal digests
    give equal numbers; that is all the rules ask of them)."""
    if digest is None:
        return None
    return span_number(digest[:16] if len(digest) == 64 else digest)
