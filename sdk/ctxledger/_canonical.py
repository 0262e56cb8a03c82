"""JSON texts read and written in the contract's canonical form: sorted keys, no
insignificant whitespace, no ASCII escaping (``ctxledger.content.canonical_sha256``).

The reference is the standard library: ``json.loads``, then ``json.dumps`` with sorted
keys. orjson, where installed, does the same several times faster, and its answer is used
only where it is byte for byte the reference's. orjson reads integers beyond 64 bits as
floats (of magnitude 2**63 and more) and writes floats under 1e-4 as ``0.00001`` where
Python writes ``1e-05``; a value holding such a float is therefore read again the
reference way, as is every text orjson refuses (``NaN``, escaped lone surrogates,
``1E400``, very deep nesting). ``tests/sdk/test_canonical.py`` compares the two.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # an optional speed-up: the reference path gives the same answers
    orjson = None  # type: ignore[assignment]

# No circularity check: what is encoded comes from json.loads, a tree.
_CANONICAL_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False
)

#: Floats at or beyond this magnitude may be integers orjson could not hold.
_ORJSON_INTEGER_LIMIT = float(2**63)


def canonical_json(parsed: Any) -> str:
    """The contract's canonical form of a parsed JSON value (the reference)."""
    return _CANONICAL_ENCODER.encode(parsed)


def _changes(number: float) -> bool:
    return number != 0.0 and not 1e-4 <= abs(number) < _ORJSON_INTEGER_LIMIT


def _orjson_changes_a_number(value: Any) -> bool:
    """Whether a value orjson read holds a float it would read or write differently."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind is float and _changes(value)
    # Only containers go on the stack; scalars are looked at where they are found.
    stack = [value]
    while stack:
        container = stack.pop()
        for item in container.values() if type(container) is dict else container:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append(item)
            elif kind is float and _changes(item):
                return True
    return False


def read_json(text: str) -> tuple[Any, bytes] | None:
    """The value of a JSON text and its canonical form's UTF-8 bytes (lone surrogates
    kept, as ``surrogatepass`` writes them); None when the text is not JSON."""
    if orjson is not None:
        try:
            parsed = orjson.loads(text)
            if not _orjson_changes_a_number(parsed):
                return parsed, orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS)
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            pass  # refused, or nested deeper than orjson writes: the reference decides
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    return parsed, canonical_json(parsed).encode("utf-8", errors="surrogatepass")
