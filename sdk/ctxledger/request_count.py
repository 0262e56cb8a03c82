"""How stage ``received`` counts a request as sent, public for the components that
derive that stage without the SDK's spans (the collector reading an LLM span's input).

The same segments (one per message, each tool result its own), the same strings and the
same per-message and priming overhead the SDK counts a request body with, so a server's
reported count is met by the same number either way (see ``_received_request``).
"""

from __future__ import annotations

from ctxledger._encodings import encoding_name_for
from ctxledger._received_request import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    CountTokens,
    RequestSegments,
    digest_counter,
    segment_request,
)
from ctxledger._tokens import TokenCounter

__all__ = [
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "CountTokens",
    "RequestSegments",
    "counter_for_model",
    "segment_request",
]

_COUNTER = TokenCounter()


def counter_for_model(model: str | None) -> tuple[CountTokens, str]:
    """A segment counter for ``model``'s prompt and the encoding that actually counts."""
    encoding = encoding_name_for(model)
    return digest_counter(_COUNTER, encoding), _COUNTER.resolve(encoding)
