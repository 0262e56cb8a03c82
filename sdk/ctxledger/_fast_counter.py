"""The fast token counters: Rust implementations of the same byte-pair encodings as
tiktoken, used only where they give tiktoken's count.

Two backends: fastokens (:mod:`ctxledger._fastokens`, PCRE2's JIT for the
pre-tokenization, the fastest here, slow to load) and bpe-openai
(:mod:`ctxledger._bpe_openai`, about twice as fast as tiktoken, quick to load). By default
bpe-openai counts first and fastokens takes over once the process has counted enough
(:mod:`ctxledger._upgrading_counter`). tiktoken stays the reference.
``tests/sdk/test_token_equivalence.py`` compares every backend with it on a generated
corpus of both encodings (no class of input disagreed, so none is routed to tiktoken). At
run time a backend is used only after it has reproduced tiktoken's counts of
:data:`PROBES` (themselves checked against tiktoken by the tests), so a release that
counts differently is passed over for the next backend, and finally for tiktoken.

One difference to know: bpe-openai holds the GIL while it counts; fastokens and tiktoken
release it.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from ctxledger import _bpe_openai, _fastokens
from ctxledger._upgrading_counter import UPGRADE_AFTER_CHARS, ExactCounter, UpgradingCounter

logger = logging.getLogger("ctxledger")

CountFunction = Callable[[str], int]

#: Encoding → the backend encoding whose ordinary counts are the same. o200k_harmony has
#: o200k_base's ranks and pattern (only special tokens differ; the SDK counts ordinary
#: text, where a special token's text is plain text).
BACKEND_ENCODINGS = {
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
}

#: (text, tiktoken's encode_ordinary count per backend encoding)
PROBES: tuple[tuple[str, dict[str, int]], ...] = (
    ("hello world", {"cl100k_base": 2, "o200k_base": 2}),
    (
        "先别急着怀疑模型。检索返回了 50 条，上下文里只剩 20 条。",
        {"cl100k_base": 35, "o200k_base": 25},
    ),
    ("emoji 👩‍👩‍👧 🏳️‍🌈 👍🏽 ok", {"cl100k_base": 28, "o200k_base": 20}),
    (
        "1234567890123456789 3.14159 2024-06-11T09:30:00Z",
        {"cl100k_base": 26, "o200k_base": 26},
    ),
    ("  \t\n\n    \r\n   x  \u3000\u00a0 end   ", {"cl100k_base": 10, "o200k_base": 10}),
    (
        "def f(x):\n    return {'a': [1, 2]}  # I'm DON'T we'LL\n",
        {"cl100k_base": 25, "o200k_base": 23},
    ),
    (
        '{"id": "doc-000001", "title": "订单 ORDER", "tags": ["a", "б", "ج"]}',
        {"cl100k_base": 28, "o200k_base": 29},
    ),
    (
        "<|endoftext|> and <|endofprompt|> <|fim_prefix|> are plain text here",
        {"cl100k_base": 24, "o200k_base": 25},
    ),
    (
        "Ωμέγα привет مرحبا שלום नमस्ते ไทย 한국어 日本語です e\u0301 ǅ ﬁ",
        {"cl100k_base": 45, "o200k_base": 22},
    ),
    ("lone \ud800 surrogate and a pair \ud83d\ude00", {"cl100k_base": 8, "o200k_base": 8}),
)


class FastCounter:
    """Exact ordinary token counts of one backend encoding, from one backend."""

    def __init__(self, encoding: str, count: CountFunction, backend: str) -> None:
        self.encoding = encoding
        self.backend = backend
        self._count = count

    def count(self, text: str) -> int:
        try:
            return self._count(text)
        except UnicodeEncodeError:
            # Lone surrogates, handled as tiktoken's encode_ordinary handles them
            # (tiktoken/core.py): surrogate pairs joined, the rest replaced by U+FFFD.
            return self._count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def describe(self) -> str:
        """The backend and its installed version, e.g. ``fastokens 0.3.5``."""
        try:
            return f"{self.backend} {metadata.version(self.backend)}"
        except metadata.PackageNotFoundError:
            return self.backend


def _bpe_openai_count(encoding: str) -> CountFunction | None:
    bindings = _bpe_openai.load_bindings()
    if bindings is None:
        return None
    count: CountFunction = bindings.tokenizer_for_encoding(encoding).count
    return count


@dataclass(frozen=True)
class Backend:
    """A fast counter's distribution name and how it is loaded for a backend encoding
    (None: not installed; an exception: installed but unusable)."""

    name: str
    load: Callable[[str], CountFunction | None]


FASTEST = Backend("fastokens", _fastokens.load_count)
QUICKEST_TO_LOAD = Backend("bpe-openai", _bpe_openai_count)
#: In the order ``CTXLEDGER_TOKEN_COUNTER`` names them: the fastest first.
BACKENDS: tuple[Backend, ...] = (FASTEST, QUICKEST_TO_LOAD)


def _matches_probes(counter: FastCounter, backend_encoding: str) -> bool:
    for text, expected in PROBES:
        got = counter.count(text)
        if got != expected[backend_encoding]:
            logger.warning(
                "ctxledger: %s counts %d %s tokens where tiktoken counts %d in %r; "
                "not counting %s with it",
                counter.backend,
                got,
                counter.encoding,
                expected[backend_encoding],
                text,
                counter.encoding,
            )
            return False
    return True


def load_fast_counter(encoding: str, backends: Sequence[Backend] = BACKENDS) -> FastCounter | None:
    """The first of ``backends`` that is installed, loads ``encoding`` and reproduces
    tiktoken's counts of the probes; None when none does. Not cached."""
    backend_encoding = BACKEND_ENCODINGS.get(encoding)
    if backend_encoding is None:
        return None
    for backend in backends:
        try:
            count = backend.load(backend_encoding)
        except Exception as error:  # a wheel that fails to load: the next one counts
            logger.warning(
                "ctxledger: %s cannot count %s (%r); trying the next counter",
                backend.name,
                encoding,
                error,
            )
            continue
        if count is None:
            continue
        counter = FastCounter(backend_encoding, count, backend.name)
        if _matches_probes(counter, backend_encoding):
            return counter
    return None


#: Names the fast counter to use (``fastokens``, ``bpe-openai``), or ``tiktoken`` for
#: none; ``auto`` (the default) counts with bpe-openai, then fastokens once the process
#: has counted enough (either alone where the other does not work). A process-wide
#: choice, read once: fastokens needs more than twice bpe-openai's memory (~160 against
#: ~70 MiB for o200k_base) and takes longer to load (~1.5 against ~0.1 s).
COUNTER_VARIABLE = "CTXLEDGER_TOKEN_COUNTER"


@functools.cache
def wanted_backends() -> tuple[Backend, ...]:
    """The backends ``CTXLEDGER_TOKEN_COUNTER`` allows, in the order they are tried (read
    once per process, so a wrong value is warned about once)."""
    wanted = os.environ.get(COUNTER_VARIABLE, "").strip().lower()
    if wanted in ("", "auto"):
        return BACKENDS
    if wanted == "tiktoken":
        return ()
    chosen = tuple(backend for backend in BACKENDS if backend.name == wanted)
    if not chosen:
        names = ", ".join(("auto", *(backend.name for backend in BACKENDS), "tiktoken"))
        logger.warning(
            "ctxledger: %s=%r is not one of %s; choosing automatically",
            COUNTER_VARIABLE,
            wanted,
            names,
        )
        return BACKENDS
    return chosen


_lock = threading.Lock()
_counters: dict[str, ExactCounter | None] = {}
_upgrade_after_chars = UPGRADE_AFTER_CHARS


def prefer_fastest() -> None:
    """For a long-lived process that counts much (the collector): under ``auto``, load
    the fastest counter at each encoding's first count rather than after
    :data:`UPGRADE_AFTER_CHARS` (the quicker one answers while it loads)."""
    global _upgrade_after_chars
    with _lock:
        _upgrade_after_chars = 0
        loaded = list(_counters.values())
    for counter in loaded:
        if isinstance(counter, UpgradingCounter):
            counter.upgrade_now()


def fast_counter(encoding: str) -> ExactCounter | None:
    """The fast counter of ``encoding``, chosen once per process and shared by the
    encodings with the same ordinary counts (o200k_harmony, o200k_base); None when no
    backend is installed, knows the encoding and counts as tiktoken does (tiktoken counts
    then)."""
    backend_encoding = BACKEND_ENCODINGS.get(encoding)
    if backend_encoding is None:
        return None
    with _lock:
        if backend_encoding not in _counters:
            _counters[backend_encoding] = _load(backend_encoding, wanted_backends())
        return _counters[backend_encoding]


def _load(backend_encoding: str, backends: tuple[Backend, ...]) -> ExactCounter | None:
    """With every backend allowed (``auto``): the one quickest to load, moving to the
    fastest once the process has counted enough (:mod:`ctxledger._upgrading_counter`);
    else the first of ``backends`` that works."""
    if backends != BACKENDS:
        return load_fast_counter(backend_encoding, backends)
    first = load_fast_counter(backend_encoding, (QUICKEST_TO_LOAD,))
    if first is None:
        return load_fast_counter(backend_encoding, BACKENDS)
    if not _fastokens.installed():
        return first
    return UpgradingCounter(
        first, lambda: load_fast_counter(backend_encoding, (FASTEST,)), _upgrade_after_chars
    )
