"""What ctxledger knows about models: context windows, for how full a request was."""

from __future__ import annotations

# Longest prefix wins. Sizes in tokens, from the providers' published model cards.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
)


def context_window_for(model: str | None, overrides: dict[str, int] | None = None) -> int | None:
    """The context window of ``model`` in tokens, or None when unknown."""
    if not model:
        return None
    for table in ((overrides or {}).items(), _CONTEXT_WINDOWS):
        matches = [(prefix, window) for prefix, window in table if model.startswith(prefix)]
        if matches:
            return max(matches, key=lambda match: len(match[0]))[1]
    return None
