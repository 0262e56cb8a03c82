"""Measure one text: code points, bytes, tokens, records, ids, fields, digests, markers."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxledger import semconv as sc
from ctxledger._canonical import read_json
from ctxledger._encodings import DEFAULT_ENCODING
from ctxledger._formats import Reading, read_text
from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS, find_item_list, item_id
from ctxledger._lru import LruCache
from ctxledger._markers import MarkerScanner
from ctxledger._serialize import plain_value
from ctxledger._tokens import TokenCount, TokenCounter

MustKeep = Callable[[Any], bool]


@dataclass(frozen=True)
class TextMeasurement:
    """Everything ctxledger knows about one text, without the text itself."""

    chars: int
    bytes: int
    tokens: int | None
    tokenizer: str | None
    tokens_estimated: bool
    sha256: str
    json_valid: bool
    canonical_sha256: str | None
    canonical_chars: int | None
    items: int | None
    item_ids: tuple[str, ...] | None
    ids_complete: bool
    fields: tuple[str, ...] | None
    fields_complete: bool
    priority_items: int | None
    markers_found: tuple[str, ...]
    requested_encoding: str = DEFAULT_ENCODING
    """The encoding asked for; ``tokenizer`` is the one that counted."""
    format: str = sc.FORMAT_TEXT
    """How the text carries its data (``semconv.FORMAT_*``)."""
    cut: bool = False
    """The text ends inside its data (JSON, a Python literal, JSON Lines or CSV cut)."""

    @property
    def json_valid_attribute(self) -> bool | None:
        """``ctxledger.json.valid`` as the SDK sends it: true for JSON; false for data
        that was cut and for plain text; left out (None) for data read whole in another
        format, or not recognised, whose text is not known to be broken."""
        if self.json_valid:
            return True
        if self.cut or self.format == sc.FORMAT_TEXT:
            return False
        return None


@dataclass(frozen=True)
class AnalysisOptions:
    """How texts are read. Every field has a default that suits the seeds' data."""

    item_keys: Sequence[str] = DEFAULT_ITEM_KEYS
    id_fields: Sequence[str] = DEFAULT_ID_FIELDS
    must_keep: MustKeep | None = None
    markers: MarkerScanner = field(default_factory=MarkerScanner)
    max_item_ids: int = 1000
    max_ids_chars: int = 32_768
    max_fields: int = 200
    count_tokens: bool = True


# Data read from a Python literal, YAML or a table may hold values JSON has no type for
# (dates, decimals, sets): they are written as the SDK's JSON serialization writes them.
_CANONICAL_DATA_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=plain_value
)


def canonical_data(value: Any) -> str:
    """The canonical form of data read from a text that is not JSON."""
    return _CANONICAL_DATA_ENCODER.encode(value)


def canonical_text(text: str) -> str:
    """The canonical form of text that is not JSON: runs of whitespace folded to one
    space, ends stripped, so re-wrapping or trailing spaces never count as loss."""
    return " ".join(text.split())


def _capped_ids(ids: list[str], max_ids: int, max_chars: int) -> tuple[tuple[str, ...], bool]:
    kept: list[str] = []
    used = 0
    for value in ids:
        used += len(value)
        if len(kept) >= max_ids or used > max_chars:
            return tuple(kept), False
        kept.append(value)
    return tuple(kept), True


@dataclass
class _Analysed:
    """A text's measurement for each encoding asked for so far; all but the token
    fields are the first one's."""

    first: TextMeasurement
    by_encoding: dict[str, TextMeasurement] = field(default_factory=dict)


_LEADING_SPACE = re.compile(r"\s*")
_JSON_LITERALS = ("true", "false", "null")


def _may_be_json(text: str) -> bool:
    if text[:1] in ("{", "[", '"'):
        return True
    first = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]  # \s* always matches
    if text[first : first + 1] in ("{", "[", '"'):
        return True
    return len(text) - first < 16 and text.strip() in _JSON_LITERALS


class TextAnalyzer:
    """Measures texts. Analyses are cached by digest, with the token count of each
    encoding, so the same text at several stages, in several requests or for several
    models is analysed once; the digest of a text equal to the previous one is not
    computed again."""

    def __init__(
        self,
        options: AnalysisOptions | None = None,
        counter: TokenCounter | None = None,
        cache_size: int = 2048,
    ) -> None:
        self.options = options or AnalysisOptions()
        self.counter = counter or TokenCounter()
        self._analysed: LruCache[str, _Analysed] = LruCache(cache_size)
        # The last text measured, its digest and its last measurement: the stages of a
        # journey measure the same text one after the other.
        self._previous: tuple[str, str, TextMeasurement | None] = (
            "",
            hashlib.sha256(b"").hexdigest(),
            None,
        )

    def measure(self, text: str, encoding: str = DEFAULT_ENCODING) -> TextMeasurement:
        encoded: bytes | None = None
        previous_text, digest, previous = self._previous
        if text is previous_text or text == previous_text:
            if previous is not None and previous.requested_encoding == encoding:
                return previous
        else:
            encoded = text.encode("utf-8", errors="surrogatepass")
            digest = hashlib.sha256(encoded).hexdigest()
        analysed = self._analysed.get(digest)
        if analysed is None:
            if encoded is None:
                encoded = text.encode("utf-8", errors="surrogatepass")
            measured = self._analyse(text, encoded, digest, encoding)
            analysed = _Analysed(measured, {encoding: measured})
            self._analysed.put(digest, analysed)
        else:
            found = analysed.by_encoding.get(encoding)
            if found is None:
                tokens = self._tokens(text, digest, encoding)
                found = replace(
                    analysed.first,
                    tokens=tokens.tokens if tokens else None,
                    tokenizer=tokens.tokenizer if tokens else None,
                    tokens_estimated=tokens.estimated if tokens else False,
                    requested_encoding=encoding,
                )
                analysed.by_encoding[encoding] = found
            measured = found
        self._previous = (text, digest, measured)
        return measured

    def _tokens(self, text: str, digest: str, encoding: str) -> TokenCount | None:
        if not self.options.count_tokens:
            return None
        return self.counter.count(text, digest, encoding, cached=False)

    def _analyse(self, text: str, encoded: bytes, digest: str, encoding: str) -> TextMeasurement:
        opts = self.options
        tokens = self._tokens(text, digest, encoding)
        read = read_json(text) if _may_be_json(text) else None
        json_valid = read is not None
        if read is not None:
            parsed, canonical = read
            reading = Reading(sc.FORMAT_JSON, find_item_list(parsed, opts.item_keys), True, parsed)
        else:
            reading = read_text(text, opts.item_keys)
            canonical = self._canonical(text, reading).encode("utf-8", errors="surrogatepass")
            parsed = reading.value

        records = reading.records
        items = None if records is None else len(records)
        item_ids: tuple[str, ...] | None = None
        ids_complete = True
        fields: tuple[str, ...] | None = None
        fields_complete = True
        if reading.data and records is not None:
            ids = [i for i in (item_id(it, opts.id_fields) for it in records) if i is not None]
            if ids:
                item_ids, ids_complete = _capped_ids(ids, opts.max_item_ids, opts.max_ids_chars)
            names = sorted({k for it in records if isinstance(it, dict) for k in it})
            if names:
                fields_complete = len(names) <= opts.max_fields
                fields = tuple(names[: opts.max_fields])
        priority = None
        if opts.must_keep is not None and records is not None:
            priority = sum(1 for it in records if _safe_predicate(opts.must_keep, it))

        markers = opts.markers.find(text, encoded)
        if isinstance(parsed, dict) and parsed.get("truncated") is True:
            markers = tuple(sorted({*markers, "json_truncated_flag"}))
        return TextMeasurement(
            chars=len(text),
            bytes=len(encoded),
            tokens=tokens.tokens if tokens else None,
            tokenizer=tokens.tokenizer if tokens else None,
            tokens_estimated=tokens.estimated if tokens else False,
            sha256=digest,
            json_valid=json_valid,
            canonical_sha256=hashlib.sha256(canonical).hexdigest(),
            canonical_chars=len(canonical.decode("utf-8", errors="surrogatepass")),
            items=items,
            item_ids=item_ids,
            ids_complete=ids_complete,
            fields=fields,
            fields_complete=fields_complete,
            priority_items=priority,
            markers_found=markers,
            requested_encoding=encoding,
            format=reading.format,
            cut=reading.cut,
        )

    @staticmethod
    def _canonical(text: str, reading: Reading) -> str:
        if reading.value is not None:
            try:
                return canonical_data(reading.value)
            except (TypeError, ValueError):  # e.g. a float too large for JSON's number
                pass
        return canonical_text(text)


def _safe_predicate(predicate: MustKeep, item: Any) -> bool:
    try:
        return bool(predicate(item))
    except Exception:  # a user predicate that fails on one item does not count it
        return False
