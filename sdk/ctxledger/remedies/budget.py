"""The size budget every remedy fits its output into, and the declaration it returns.

A :class:`Budget` limits code points (``chars``), tokens (``tokens``, counted exactly and
offline with the SDK's token counter, which gives tiktoken's counts), or both; a text
fits when it is within every limit that is set. A budget with neither limit is unlimited.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ctxledger._encodings import DEFAULT_ENCODING, load_encoding
from ctxledger._safety import raise_errors, report_failure
from ctxledger._serialize import to_text
from ctxledger._tokens import TokenCounter

# Exact counts at any length: a budget check must never rest on an extrapolation.
_COUNTER = TokenCounter(max_exact_chars=sys.maxsize)

#: The longest token of each encoding, in bytes (a test checks them against tiktoken's
#: vocabularies); other encodings read it from their vocabulary.
_LONGEST_TOKEN_BYTES = {"cl100k_base": 128, "o200k_base": 128, "o200k_harmony": 128}


@functools.lru_cache(maxsize=16)
def _max_token_bytes(name: str) -> int:
    """The longest token of ``name`` in bytes: no text has fewer tokens than its chars
    divided by this, which rejects huge texts without counting them."""
    used = _COUNTER.resolve(name)
    known = _LONGEST_TOKEN_BYTES.get(used)
    if known is not None:
        return known
    try:
        return max(len(value) for value in load_encoding(used).token_byte_values())
    except Exception:  # an encoding without the helper: no shortcut
        return sys.maxsize


class Declaration(TypedDict):
    """Keyword arguments for :func:`ctxledger.measure` that declare what a remedy did."""

    declared: bool
    strategy: str | None
    marker: bool | None


def declaration(removed: bool, strategy: str, *, marker: bool = True) -> Declaration:
    """``declared=True`` with ``strategy`` when something was removed, and ``marker``
    (whether the text carries a visible marker); otherwise nothing is declared and
    marker detection is left to the SDK."""
    if removed:
        return Declaration(declared=True, strategy=strategy, marker=marker)
    return Declaration(declared=False, strategy=None, marker=None)


def _limit(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"Budget.{name} must be an int or None, not {type(value).__name__}")
    return max(0, int(value))


@dataclass(frozen=True)
class Budget:
    """At most ``chars`` code points and at most ``tokens`` tokens of ``encoding``.

    Either limit may be None (not limited). Negative limits count as 0.
    """

    chars: int | None = None
    tokens: int | None = None
    encoding: str = DEFAULT_ENCODING

    def __post_init__(self) -> None:
        object.__setattr__(self, "chars", _limit(self.chars, "chars"))
        object.__setattr__(self, "tokens", _limit(self.tokens, "tokens"))
        if not isinstance(self.encoding, str) or not self.encoding:
            object.__setattr__(self, "encoding", DEFAULT_ENCODING)

    @property
    def unlimited(self) -> bool:
        return self.chars is None and self.tokens is None

    @property
    def unit(self) -> Literal["tokens", "chars"] | None:
        """The unit :meth:`size` and :attr:`limit` use: tokens when a token limit is
        set, else chars; None for an unlimited budget."""
        if self.tokens is not None:
            return "tokens"
        if self.chars is not None:
            return "chars"
        return None

    @property
    def limit(self) -> int | None:
        """The limit in :attr:`unit`."""
        return self.tokens if self.tokens is not None else self.chars

    def tokens_of(self, text: str) -> int:
        """The exact token count of ``text`` in this budget's encoding."""
        if not isinstance(text, str):
            text = to_text(text)
        try:
            digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
            return _COUNTER.count(text, digest, self.encoding).tokens
        except Exception as error:  # lone surrogates and the like: count a clean copy
            if raise_errors() and not isinstance(error, UnicodeError):
                raise
            report_failure("Budget.tokens_of", error)
            clean = text.encode("utf-8", errors="replace").decode("utf-8")
            digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()
            return _COUNTER.count(clean, digest, self.encoding).tokens

    def tokens_of_many(self, texts: Sequence[str]) -> list[int]:
        """Exact token counts of many (typically small) texts, without caching them."""
        try:
            return _COUNTER.count_many(texts, self.encoding)
        except Exception:  # a text that is not a str: one by one, as tokens_of reads it
            return [self.tokens_of(text) for text in texts]

    def size(self, text: str) -> int:
        """The size of ``text`` in :attr:`unit` (chars for an unlimited budget)."""
        if not isinstance(text, str):
            text = to_text(text)
        return self.tokens_of(text) if self.tokens is not None else len(text)

    def fits(self, text: str) -> bool:
        """Whether ``text`` is within every limit of this budget."""
        if not isinstance(text, str):
            text = to_text(text)
        if self.chars is not None and len(text) > self.chars:
            return False
        if self.tokens is None:
            return True
        if len(text) <= self.tokens and text.isascii():
            return True  # every token covers at least one byte
        if len(text) > self.tokens * _max_token_bytes(self.encoding):
            return False  # more chars than that many tokens can cover
        return self.tokens_of(text) <= self.tokens

    def scaled(self, share: float, reserve: str = "") -> Budget:
        """The budget for a part: ``share`` of what is left after ``reserve``."""
        share = min(1.0, max(0.0, float(share)))

        def part(limit: int | None, used: int) -> int | None:
            return None if limit is None else max(0, int((limit - used) * share))

        return Budget(
            chars=part(self.chars, len(reserve)),
            tokens=part(self.tokens, self.tokens_of(reserve) if self.tokens is not None else 0),
            encoding=self.encoding,
        )

    def describe(self) -> str:
        """``"2,000 chars"``, ``"500 tokens"``, ``"2,000 chars and 500 tokens"``."""
        parts = []
        if self.chars is not None:
            parts.append(f"{self.chars:,} chars")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        return " and ".join(parts) or "unlimited"


def as_budget(budget: Budget | int | None) -> Budget:
    """A :class:`Budget` from a Budget, a plain char count, or None (unlimited)."""
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, int) and not isinstance(budget, bool):
        return Budget(chars=budget)
    return Budget()
