"""The installed ``fastokens`` wheel as an exact token counter.

fastokens (Apache-2.0) is a Rust tokenizer whose pre-tokenization runs on PCRE2's JIT. Built
from an OpenAI vocabulary and tiktoken's pattern it gives tiktoken's ``encode_ordinary``
counts (``tests/sdk/test_token_equivalence.py``) several times faster than bpe-openai on
the SDK's texts (``bench/sdk_overhead.py``) and releases the GIL while it counts.

It reads a vocabulary from a file: the hash-checked copy the bpe-openai wheel ships
(:mod:`ctxledger._vocabularies`) is written to a private temporary directory, read once,
and removed. Loading ``o200k_base`` takes about 1.5 s (the GIL released) and ~160 MiB;
the first count compiles the pattern (~0.15 s, the GIL held).
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Callable
from pathlib import Path

from ctxledger import _bpe_openai
from ctxledger._encodings import CL100K_PATTERN, O200K_PATTERN
from ctxledger._vocabularies import read_vocabulary

PACKAGE = "fastokens"

#: Backend encoding → tiktoken's pre-tokenization pattern for it.
PATTERNS = {"cl100k_base": CL100K_PATTERN, "o200k_base": O200K_PATTERN}


def installed() -> bool:
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):
        return False


def load_count(encoding: str) -> Callable[[str], int] | None:
    """The exact ordinary-token count of ``encoding`` by fastokens; None when fastokens is
    not installed. Raises when the vocabulary is unavailable or fastokens cannot load it."""
    if encoding not in PATTERNS or not installed() or _bpe_openai.package_dir() is None:
        return None  # no fastokens, or no vocabulary file for it to read
    import fastokens

    data = read_vocabulary(encoding)
    with tempfile.TemporaryDirectory(prefix="ctxledger-vocabulary-") as directory:
        path = Path(directory, f"{encoding}.tiktoken")
        path.write_bytes(data)
        tokenizer = fastokens.Tokenizer.from_tiktoken(str(path), pattern=PATTERNS[encoding])
    # No special tokens are registered, so no text is read as one; the flat form makes no
    # Python object per token (4 bytes an id).
    encode_flat = tokenizer.encode_batch_flat

    def count(text: str) -> int:
        return len(encode_flat([text], split_special_tokens=True)[0]) // 4

    return count
