"""Token counting with tiktoken, offline, cached by content digest and bounded in cost."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import tiktoken

DEFAULT_ENCODING = "cl100k_base"
#: tiktoken's download locations; a cached copy makes an encoding usable offline.
_BLOB_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    tokenizer: str
    estimated: bool = False


def _cached_offline(name: str) -> bool:
    """Whether tiktoken can load ``name`` without a network (its cache holds the file)."""
    url = _BLOB_URLS.get(name)
    if url is None:
        return False
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache_dir:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.exists(os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest()))


def _registered(name: str) -> bool:
    try:
        from tiktoken.registry import list_encoding_names

        return name in list_encoding_names()
    except Exception:  # old tiktoken without the helper
        return False


def encoding_name_for(model: str | None, default: str = DEFAULT_ENCODING) -> str:
    """The encoding a model uses (``o200k_base`` for gpt-4o and later, ``cl100k_base``
    for gpt-4 and gpt-3.5, the default for models tiktoken does not know)."""
    if not model:
        return default
    try:
        return str(tiktoken.encoding_name_for_model(model))
    except KeyError:
        return default


class TokenCounter:
    """Counts tokens exactly up to ``max_exact_chars``; beyond it, extrapolates from a
    prefix of that length and flags the count as estimated. Counts are cached by
    (content digest, encoding) so identical text seen at several stages is encoded once.
    """

    def __init__(self, max_exact_chars: int = 1_048_576, cache_size: int = 4096) -> None:
        self.max_exact_chars = max_exact_chars
        self._cache: OrderedDict[tuple[str, str], TokenCount] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._encodings: dict[str, Any] = {}
        self._resolved: dict[str, str] = {}

    def resolve(self, name: str) -> str:
        """The encoding actually used for ``name``: itself when loadable offline, else
        the bundled ``cl100k_base``."""
        if name not in self._resolved:
            usable = (
                name == DEFAULT_ENCODING
                or _registered(f"{name}_offline")
                or (_cached_offline(name))
            )
            self._resolved[name] = name if usable else DEFAULT_ENCODING
        return self._resolved[name]

    def _encoding(self, name: str) -> Any:
        encoding = self._encodings.get(name)
        if encoding is None:
            offline = f"{name}_offline"
            encoding = tiktoken.get_encoding(offline if _registered(offline) else name)
            self._encodings[name] = encoding
        return encoding

    def count(self, text: str, digest: str, encoding_name: str = DEFAULT_ENCODING) -> TokenCount:
        name = self.resolve(encoding_name)
        key = (digest, name)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        encoding = self._encoding(name)
        if len(text) <= self.max_exact_chars:
            result = TokenCount(len(encoding.encode_ordinary(text)), name)
        else:
            prefix = text[: self.max_exact_chars]
            prefix_tokens = len(encoding.encode_ordinary(prefix))
            estimate = round(prefix_tokens * len(text) / len(prefix))
            result = TokenCount(estimate, name, estimated=True)
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result
