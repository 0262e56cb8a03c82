"""llama.cpp-like token truncation: a prompt of ``n_ctx`` tokens or more keeps its first
``n_keep`` tokens and a tail, and the middle is erased in blocks.

The arithmetic of llama.cpp's server before it refused over-long prompts (the
"input truncated" log of llama.cpp#10547, ``tools/server/server.cpp``)::

    n_keep = min(n_ctx - 4, n_keep)          # n_keep < 0: keep the whole prompt
    n_left = n_ctx - n_keep
    n_block_size = n_left / 2
    erased_blocks = (n_prompt - n_keep - n_block_size) / n_block_size
    kept = prompt[:n_keep] + prompt[n_keep + erased_blocks * n_block_size:]

all in integers, and the answer says ``truncated: true``. The stand-in applies it to its
own tokens (:mod:`.counting`: the window and ``n_keep`` are given in reported units),
and for a chat prompt maps the erased span onto the messages of the layout
(:class:`~ctxledger_cli.provider.tokens.Layout`): each message wholly inside it is
dropped, each it runs through is cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxledger_cli.provider.tokens import Layout


@dataclass(frozen=True)
class Truncation:
    """Own tokens: ``[keep, keep + erased)`` of the prompt were erased."""

    received: int
    keep: int
    erased: int

    @property
    def kept(self) -> int:
        return self.received - self.erased

    @property
    def truncated(self) -> bool:
        return self.erased > 0


def truncate(n_prompt: int, n_ctx: int, n_keep: int) -> Truncation:
    """llama.cpp's rule for a prompt of ``n_prompt`` tokens in a window of ``n_ctx``."""
    if n_prompt < n_ctx or n_ctx <= 4:
        return Truncation(n_prompt, 0, 0)
    keep = n_prompt if n_keep < 0 else n_keep
    keep = max(0, min(n_ctx - 4, keep))
    block = (n_ctx - keep) // 2
    if block <= 0:
        return Truncation(n_prompt, keep, 0)
    erased_blocks = max(0, (n_prompt - keep - block) // block)
    return Truncation(n_prompt, keep, erased_blocks * block)


def messages_hit(layout: Layout, cut: Truncation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The messages of ``layout`` the erased span covers wholly (dropped) and partly
    (cut), by their index in the request's messages."""
    start, end = cut.keep, cut.keep + cut.erased
    dropped: list[int] = []
    partly: list[int] = []
    for index in range(layout.messages):
        first, last = layout.message_span(index)
        if last <= start or first >= end or first == last:
            continue
        if first >= start and last <= end:
            dropped.append(index)
        else:
            partly.append(index)
    return tuple(dropped), tuple(partly)
