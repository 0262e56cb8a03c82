"""Measure one text: code points, bytes, tokens, records, ids, fields, digests, markers."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxledger._encodings import DEFAULT_ENCODING
from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS, item_id, view_items
from ctxledger._markers import MarkerScanner
from ctxledger._tokens import TokenCounter

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


def canonical_json(parsed: Any) -> str:
    """The contract's canonical form: sorted keys, no insignificant whitespace, no ASCII
    escaping."""
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


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


class TextAnalyzer:
    """Measures texts; results are cached by (digest, encoding), so the same text at
    several stages, or the same result in several requests, is analysed once."""

    def __init__(
        self,
        options: AnalysisOptions | None = None,
        counter: TokenCounter | None = None,
        cache_size: int = 2048,
    ) -> None:
        self.options = options or AnalysisOptions()
        self.counter = counter or TokenCounter()
        self._cache: OrderedDict[tuple[str, str], TextMeasurement] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def measure(self, text: str, encoding: str = DEFAULT_ENCODING) -> TextMeasurement:
        encoded = text.encode("utf-8", errors="surrogatepass")
        digest = hashlib.sha256(encoded).hexdigest()
        key = (digest, encoding)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        result = self._analyse(text, len(encoded), digest, encoding)
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result

    def _analyse(self, text: str, size: int, digest: str, encoding: str) -> TextMeasurement:
        opts = self.options
        parsed: Any = None
        json_valid = False
        if text.lstrip()[:1] in ("{", "[", '"') or text.strip() in ("true", "false", "null"):
            try:
                parsed = json.loads(text)
                json_valid = True
            except ValueError:
                pass
        canonical = canonical_json(parsed) if json_valid else canonical_text(text)

        view = view_items(text, parsed, json_valid, opts.item_keys)
        items = None if view.kind == "none" else len(view.items)
        item_ids: tuple[str, ...] | None = None
        ids_complete = True
        fields: tuple[str, ...] | None = None
        fields_complete = True
        if view.kind in ("json", "recovered"):
            ids = [i for i in (item_id(it, opts.id_fields) for it in view.items) if i is not None]
            if ids:
                item_ids, ids_complete = _capped_ids(ids, opts.max_item_ids, opts.max_ids_chars)
            names = sorted({k for it in view.items if isinstance(it, dict) for k in it})
            if names:
                fields_complete = len(names) <= opts.max_fields
                fields = tuple(names[: opts.max_fields])
        priority = None
        if opts.must_keep is not None and view.kind != "none":
            priority = sum(1 for it in view.items if _safe_predicate(opts.must_keep, it))

        markers = opts.markers.find(text)
        if json_valid and isinstance(parsed, dict) and parsed.get("truncated") is True:
            markers = tuple(sorted({*markers, "json_truncated_flag"}))
        tokens = self.counter.count(text, digest, encoding) if opts.count_tokens else None
        return TextMeasurement(
            chars=len(text),
            bytes=size,
            tokens=tokens.tokens if tokens else None,
            tokenizer=tokens.tokenizer if tokens else None,
            tokens_estimated=tokens.estimated if tokens else False,
            sha256=digest,
            json_valid=json_valid,
            canonical_sha256=hashlib.sha256(
                canonical.encode("utf-8", errors="surrogatepass")
            ).hexdigest(),
            canonical_chars=len(canonical),
            items=items,
            item_ids=item_ids,
            ids_complete=ids_complete,
            fields=fields,
            fields_complete=fields_complete,
            priority_items=priority,
            markers_found=markers,
        )


def _safe_predicate(predicate: MustKeep, item: Any) -> bool:
    try:
        return bool(predicate(item))
    except Exception:  # a user predicate that fails on one item does not count it
        return False
