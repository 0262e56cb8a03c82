"""Measure one text the way the SDK measures a tool result at a stage.

Public for the components that derive measurements from text they hold only briefly
(the collector reading an LLM span's input messages): the same code points, bytes,
tokens (with the encoding of the model), records, item ids, field names, canonical
digest and markers the SDK's stage spans carry, so the rules judge both alike. The
text itself is never kept; analyses are cached by digest, so a tool result that every
later request of a run re-sends is analysed once.
"""

from __future__ import annotations

from ctxledger._analysis import TextAnalyzer, TextMeasurement
from ctxledger._canonical import canonical_json
from ctxledger._encodings import encoding_name_for
from ctxledger._fast_counter import prefer_fastest

__all__ = [
    "TextMeasurement",
    "canonical_json",
    "count_with_the_fastest_counter",
    "encoding_for_model",
    "measure_text",
]

_ANALYZER = TextAnalyzer(cache_size=4096)


def encoding_for_model(model: str | None) -> str:
    """The token encoding the SDK counts a model's tokens with (``cl100k_base`` for a
    model it does not know, or none)."""
    return encoding_name_for(model)


def measure_text(text: str, *, model: str | None = None) -> TextMeasurement:
    """Everything the SDK measures of ``text``, tokens counted for ``model``.
    ``TextMeasurement.tokenizer`` names the encoding that actually counted."""
    return _ANALYZER.measure(text, encoding_name_for(model))


def count_with_the_fastest_counter() -> None:
    """For a long-lived process that counts much (the collector): load the fastest exact
    counter at each encoding's first count, not once the process has counted 32 Mi chars
    as an agent does (the quicker counter answers while it loads; the counts are the
    same)."""
    prefer_fastest()
