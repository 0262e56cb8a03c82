"""Read the text ``str()`` / ``repr()`` gives for Python data: single-quoted strings,
``True``/``None``, tuples, sets and the reprs of common objects. Nothing is evaluated.

A small recursive-descent reader over a regex tokenizer, bounded in depth and size:
* ``datetime``, ``date``, ``time``, ``timedelta``, ``timezone``, ``Decimal`` and ``UUID``
  reprs are rebuilt from their literal arguments (the only objects ever constructed), so
  their text is the one the SDK's JSON serialization gives them (``str(value)``);
* a call with keyword arguments only (a dataclass or pydantic model repr) reads as the
  mapping of its fields, as ``model_dump`` / ``asdict`` would give it;
* any other call, ``<object at 0x…>`` and ``...`` read as their source text.
Text cut at its end reads as the complete part: lists keep their complete elements,
mappings the entries read so far.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

#: Deeper nesting than this is not read (the text counts as not recognised).
MAX_DEPTH = 100
#: Longer texts are not read at all.
MAX_CHARS = 8 * 1024 * 1024

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>[rRbBuU]{0,2}(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
    | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[jJ]?)
    | (?P<name>[^\W\d]\w*(?:\.[^\W\d]\w*)*)
    | (?P<opaque><[^<>\n]*>|\.\.\.)
    | (?P<punct>[\[\](){},:=+-])
    )""",
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"',
    "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": "",
}  # fmt: skip
_NAMES: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "nan": float("nan"),
    "inf": float("inf"),
    "Ellipsis": "...",
    "datetime.timezone.utc": dt.timezone.utc,
    "timezone.utc": dt.timezone.utc,
}
# A string, dotted name or object repr that the end of the text cut open.
_OPEN_AT_END = re.compile(
    r"""(?:[rRbBuU]{0,2}(?:'(?:[^'\\\n]|\\.)*|"(?:[^"\\\n]|\\.)*)|<[^<>\n]*|[\w.]*\.)\\?\Z"""
)
#: Names that mean the text is JSON-like rather than Python (``true`` is no Python).
_FOREIGN_NAMES = frozenset({"true", "false", "null"})


def _mapping_of(*args: Any, **_: Any) -> dict[Any, Any]:
    if not args:
        return {}
    source = args[-1]  # defaultdict(<class 'list'>, {...}): the mapping is last
    return dict(source)


_CONSTRUCTORS: dict[str, Callable[..., Any]] = {
    **{f"{p}{n}": getattr(dt, n) for p in ("", "datetime.") for n in ("date", "time")},
    **{f"{p}timedelta": dt.timedelta for p in ("", "datetime.")},
    **{f"{p}timezone": dt.timezone for p in ("", "datetime.")},
    "datetime": dt.datetime,
    "datetime.datetime": dt.datetime,
    "Decimal": Decimal,
    "decimal.Decimal": Decimal,
    "UUID": uuid.UUID,
    "uuid.UUID": uuid.UUID,
    "set": lambda *a: list(*a),
    "frozenset": lambda *a: list(*a),
    "deque": lambda *a, **_: list(*a[:1]),
    "OrderedDict": _mapping_of,
    "collections.OrderedDict": _mapping_of,
    "defaultdict": _mapping_of,
    "Counter": _mapping_of,
}


class NotPython(ValueError):
    """The text is not Python data this reader knows."""


class _Cut(Exception):
    """The text ended inside a value; ``partial`` is what was complete of it."""

    def __init__(self, partial: Any = None) -> None:
        self.partial = partial


def _unescape(body: str, as_bytes: bool) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return "\\" + code

    text = _ESCAPE.sub(one, body) if "\\" in body else body
    if as_bytes:  # as the SDK serializes bytes: UTF-8, undecodable bytes replaced
        return text.encode("latin-1", errors="replace").decode("utf-8", errors="replace")
    return text


def _without_open_scalar(items: list[Any]) -> list[Any]:
    """A list whose last element no separator followed: a scalar may have been cut."""
    if items and not isinstance(items[-1], (list, dict)):
        items.pop()
    return items


def json_key(key: Any) -> str:
    """A mapping key as ``json.dumps`` writes it."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return float.__repr__(key)
    return str(key)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.peeked: tuple[str, str, int, int] | None = None
        self.ends_open = False  # the text ends inside a string, a name or an object repr

    def _scan(self) -> tuple[str, str, int, int]:
        match = _TOKEN.match(self.text, self.pos)
        if match is None or match.lastgroup is None:
            rest = self.text[self.pos :].lstrip()
            if rest and not _OPEN_AT_END.match(rest):
                raise NotPython("unexpected character")
            self.ends_open = bool(rest)
            return ("end", "", len(self.text), len(self.text))
        return (
            match.lastgroup,
            match.group(match.lastgroup),
            match.start(match.lastgroup),
            match.end(),
        )

    def peek(self) -> tuple[str, str, int, int]:
        if self.peeked is None:
            self.peeked = self._scan()
        return self.peeked

    def take(self) -> tuple[str, str, int, int]:
        token = self.peek()
        self.peeked = None
        self.pos = token[3]
        return token

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise NotPython("too deep")
        kind, text, start, _ = self.take()
        if kind == "end":
            raise _Cut()
        if kind == "str":
            return self._strings(text)
        if kind == "num":
            return self._number(text)
        if kind == "opaque":
            return text
        if kind == "name":
            if self.peek()[1] == "(":
                self.take()
                return self._call(text, start, depth)
            if text in _FOREIGN_NAMES:
                raise NotPython("a JSON literal")
            return _NAMES.get(text, text)
        if text == "[":
            return self._sequence("]", depth)
        if text == "(":
            return self._sequence(")", depth)
        if text == "{":
            return self._braces(depth)
        if text in "+-":
            operand = self.value(depth + 1)
            if not isinstance(operand, (int, float)) or isinstance(operand, bool):
                raise NotPython("sign before a non-number")
            return -operand if text == "-" else operand
        raise NotPython(f"unexpected {text!r}")

    def _strings(self, first: str) -> str:
        parts = [self._string(first)]
        while self.peek()[0] == "str":  # implicit concatenation, as pprint wraps strings
            parts.append(self._string(self.take()[1]))
        return "".join(parts)

    @staticmethod
    def _string(token: str) -> str:
        quote = token.index(token[-1])
        prefix = token[:quote].lower()
        body = token[quote + 1 : -1]
        return body if "r" in prefix else _unescape(body, "b" in prefix)

    @staticmethod
    def _number(text: str) -> Any:
        if text[-1] in "jJ":
            return text
        try:
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:  # an int beyond Python's digit limit: its text
            return text

    def _sequence(self, closer: str, depth: int) -> list[Any]:
        items: list[Any] = []
        while True:
            if self.peek()[1] == closer:
                self.take()
                return items
            try:
                items.append(self.value(depth + 1))
                kind, text, _, _ = self.take()
            except _Cut:
                raise _Cut(items) from None
            if kind == "end":
                raise _Cut(_without_open_scalar(items))
            if text == closer:
                return items
            if text != ",":
                raise NotPython(f"expected ',' or {closer!r}")

    def _braces(self, depth: int) -> Any:
        if self.peek()[1] == "}":
            self.take()
            return {}
        try:
            first = self.value(depth + 1)
            separator = self.take()
        except _Cut:
            raise _Cut({}) from None
        if separator[0] == "end":
            raise _Cut({})
        if separator[1] != ":":  # a set
            return self._set_after(first, separator, depth)
        mapping: dict[str, Any] = {}
        key = first
        while True:
            try:
                mapping[json_key(key)] = self.value(depth + 1)
            except _Cut as cut:
                if cut.partial is not None:
                    mapping[json_key(key)] = cut.partial
                raise _Cut(mapping) from None
            kind, text, _, _ = self.take()
            if kind == "end":
                if not isinstance(mapping[json_key(key)], (list, dict)):
                    del mapping[json_key(key)]  # a scalar the end may have cut
                raise _Cut(mapping)
            if text == "}":
                return mapping
            if text != ",":
                raise NotPython("expected ',' or '}'")
            if self.peek()[1] == "}":
                self.take()
                return mapping
            try:
                key = self.value(depth + 1)
                colon = self.take()
            except _Cut:
                raise _Cut(mapping) from None
            if colon[0] == "end":
                raise _Cut(mapping)
            if colon[1] != ":":
                raise NotPython("expected ':'")

    def _set_after(self, first: Any, separator: tuple[str, str, int, int], depth: int) -> Any:
        items = [first]
        kind, text = separator[0], separator[1]
        while True:
            if kind == "end":
                raise _Cut(items)
            if text == "}":
                return items
            if text != ",":
                raise NotPython("expected ',' or '}'")
            if self.peek()[1] == "}":
                self.take()
                return items
            try:
                items.append(self.value(depth + 1))
            except _Cut:
                raise _Cut(items) from None
            kind, text, _, _ = self.take()
            if kind == "end":
                raise _Cut(_without_open_scalar(items))

    def _call(self, name: str, start: int, depth: int) -> Any:
        try:
            return self._call_arguments(name, start, depth)
        except _Cut:  # a call cut in its arguments is no complete part of anything
            raise _Cut() from None

    def _call_arguments(self, name: str, start: int, depth: int) -> Any:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        while True:
            kind, text, _, _ = self.peek()
            if text == ")":
                self.take()
                break
            if kind == "name" and self._keyword_follows():
                self.take()
                self.take()  # "="
                kwargs[text] = self.value(depth + 1)
            else:
                args.append(self.value(depth + 1))
            kind, text, _, _ = self.take()
            if kind == "end":
                raise _Cut()
            if text == ")":
                break
            if text != ",":
                raise NotPython("expected ',' or ')'")
        constructor = _CONSTRUCTORS.get(name)
        if constructor is not None:
            try:
                return constructor(*args, **kwargs)
            except (TypeError, ValueError, ArithmeticError):
                pass
        elif kwargs and not args:
            return kwargs
        return self.text[start : self.pos]

    def _keyword_follows(self) -> bool:
        saved = (self.pos, self.peeked)
        self.take()
        follows = self.peek()[1] == "="
        self.pos, self.peeked = saved
        return follows


def read_python(text: str) -> tuple[Any, bool]:
    """The Python data ``text`` shows and whether it is whole (False: cut at its end, or
    followed by other text; the value is then its complete part). Raises
    :class:`NotPython` when the text is no Python data this reader knows."""
    if len(text) > MAX_CHARS:
        raise NotPython("too long")
    reader = _Reader(text)
    try:
        value = reader.value(0)
    except _Cut as cut:
        if cut.partial is None:
            raise NotPython("cut before any data") from None
        return cut.partial, False
    except NotPython:
        raise
    except (ValueError, OverflowError, RecursionError) as error:  # e.g. \U escapes past U+10FFFF
        raise NotPython(f"not readable: {type(error).__name__}") from None
    return value, reader.peek()[0] == "end" and not reader.ends_open
