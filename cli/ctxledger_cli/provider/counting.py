"""Counting like another model's tokenizer (``--count-scale``, ``--count-encoding``).

By default the stand-in counts with the SDK's own counter for the model
(:mod:`.tokens`), so a test that reads the stand-in's usage checks the SDK against
itself. A :class:`Counting` makes every count it reports differ the way another
tokenizer's would:

* ``encoding``: count the texts with that encoding instead of the model's
  (``cl100k_base`` or ``o200k_base``: the two the SDK loads offline);
* ``scale``: multiply the count by a factor (``1.2``: a tokenizer that makes 20 % more
  tokens of the same text, as Llama's or Qwen's often do next to cl100k_base).

Every reported count (prompt and completion, every API) is in these units, and every
window (``--context-window``, ``num_ctx``, ``n_ctx``, a context-editing trigger) is
applied in them: ``units(own count)``, rounded to the nearest token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger_cli.provider.tokens import Layout, count_answer, count_text, prompt_layout

#: The encodings a count may be switched to, and a model the SDK counts with each.
ENCODING_MODELS: dict[str, str] = {"cl100k_base": "gpt-4", "o200k_base": "gpt-4o"}


@dataclass(frozen=True)
class Counting:
    scale: float = 1.0
    encoding: str | None = None

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"the count scale must be positive, not {self.scale!r}")
        if self.encoding is not None and self.encoding not in ENCODING_MODELS:
            known = ", ".join(ENCODING_MODELS)
            raise ValueError(f"unknown count encoding {self.encoding!r} (one of {known})")

    def model_for(self, model: str) -> str:
        """The model whose counter counts ``model``'s texts here."""
        return ENCODING_MODELS[self.encoding] if self.encoding else model

    def units(self, own: int) -> int:
        """A count of the stand-in's own tokens, in the reported units."""
        return own if self.scale == 1.0 else round(own * self.scale)

    def own(self, units: int) -> int:
        """The most own tokens whose count in reported units is at most ``units``."""
        return units if self.scale == 1.0 else int(units // self.scale)

    def layout(
        self,
        messages: Sequence[Any],
        model: str,
        *,
        tools: Sequence[Any] | None = None,
        system: Any = None,
    ) -> Layout:
        """The prompt's layout in own tokens (of ``encoding`` when one is set)."""
        return prompt_layout(messages, self.model_for(model), tools=tools, system=system)

    def prompt(
        self,
        messages: Sequence[Any],
        model: str,
        *,
        tools: Sequence[Any] | None = None,
        system: Any = None,
    ) -> int:
        """A prompt's tokens in reported units."""
        return self.units(self.layout(messages, model, tools=tools, system=system).total)

    def text(self, text: str, model: str) -> int:
        return self.units(count_text(text, self.model_for(model)))

    def answer(self, text: str | None, calls: Sequence[tuple[str, str]], model: str) -> int:
        return self.units(count_answer(text, calls, self.model_for(model)))
