"""Masking secrets and personal data in captured content, before it is stored or sent.

Content is captured only when opted in (the SDK's ``capture_content``, the collector's
``CTXLEDGER_STORE_MESSAGE_CONTENT``); whatever is captured goes through :func:`redact`
first. It masks API keys (OpenAI/Anthropic ``sk-``, AWS ``AKIA``/``ASIA``, GitHub
``ghp_``…/``github_pat_``, Slack ``xox?-``, Google ``AIza``), bearer tokens, JSON Web
Tokens, private key blocks, e-mail addresses and card numbers (13–19 digits that pass
the Luhn check), each replaced by ``[REDACTED:<kind>]``.

It fails closed: :func:`redact_or_none` answers None on any error, and the caller then
keeps no content at all. Pure: standard library only. Boundaries are ASCII look-arounds
rather than ``\\b``, so a key or card number written right after Chinese text (a word
character to ``\\b``) is still found.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

#: Redaction looks this far past the cut a caller will make, so a secret straddling the
#: cut is still recognised whole (and then cut away with its mask).
LOOKAHEAD_CHARS = 4_096

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"
_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    ),
    ("bearer_token", r"(?i:bearer)[ \t]+(?P<bearer>[A-Za-z0-9._~+/=-]{8,})"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"),
    ("api_key", _NOT_ALNUM_BEFORE + r"sk-[A-Za-z0-9_-]{16,}"),
    ("api_key", _NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _NOT_ALNUM_AFTER),
    ("api_key", _NOT_ALNUM_BEFORE + r"gh[pousr]_[A-Za-z0-9]{30,}"),
    ("api_key", _NOT_ALNUM_BEFORE + r"github_pat_[A-Za-z0-9_]{22,}"),
    ("api_key", _NOT_ALNUM_BEFORE + r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("api_key", _NOT_ALNUM_BEFORE + r"AIza[0-9A-Za-z_-]{35}"),
    (
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    ),
    ("card_number", r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])"),
)
_GROUPS = {f"k{index}": kind for index, (kind, _) in enumerate(_PATTERNS)}
_COMBINED = re.compile(
    "|".join(f"(?P<k{index}>{pattern})" for index, (_, pattern) in enumerate(_PATTERNS)),
    re.DOTALL,
)


class RedactionError(RuntimeError):
    """The text could not be redacted; nothing of it may be kept."""


@dataclass(frozen=True)
class Redacted:
    """The masked text and how many of each kind were masked."""

    text: str
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def masked(self) -> int:
        return sum(self.counts.values())


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (card numbers do)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def mask(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str) -> Redacted:
    """``text`` with every secret, e-mail address and card number masked.

    Raises :class:`RedactionError` when it cannot redact (never returns a partly
    redacted text)."""
    if not isinstance(text, str):
        raise RedactionError(f"cannot redact a {type(text).__name__}")
    counts: Counter[str] = Counter()

    def replace(match: re.Match[str]) -> str:
        group = match.lastgroup or ""
        kind = _GROUPS[group]
        found = match.group(group)
        if kind == "card_number":
            digits = found.replace(" ", "").replace("-", "")
            if not 13 <= len(digits) <= 19 or not luhn_valid(digits):
                return found
        counts[kind] += 1
        if kind == "bearer_token":  # keep the scheme word, mask the token
            start = match.start("bearer") - match.start()
            return found[:start] + mask(kind)
        return mask(kind)

    try:
        masked = _COMBINED.sub(replace, text)
    except Exception as error:
        raise RedactionError(f"redaction failed: {error.__class__.__name__}") from error
    return Redacted(masked, counts)


def redact_or_none(text: str, limit: int | None = None) -> str | None:
    """The redacted text (cut to ``limit`` code points after redacting), or None when it
    could not be redacted: fail closed, keep nothing. Never raises."""
    try:
        if limit is not None:
            text = text[: limit + LOOKAHEAD_CHARS]
        masked = redact(text).text
    except Exception:
        return None
    return masked if limit is None else masked[:limit]
