"""What the SDK knows about models, public for the components that derive records
without the SDK's spans (the collector reading an LLM span names only the model): each
model's context window, from the same table the SDK's manifests use, and whether the
SDK's token count is the model server's own."""

from __future__ import annotations

from ctxledger._encodings import encoding_name_for
from ctxledger._models import context_window_for

__all__ = ["context_window_for_model", "tokenizer_is_exact"]

#: The hosts that serve OpenAI's models with OpenAI's own tokenizers.
_OPENAI_HOSTS = ("api.openai.com",)
_OPENAI_HOST_SUFFIXES = (".openai.azure.com",)


def context_window_for_model(model: str | None) -> int | None:
    """The context window of ``model`` in tokens (longest known prefix), None if unknown."""
    return context_window_for(model)


def tokenizer_is_exact(
    model: str | None, provider_host: str | None, tokenizer: str | None = None
) -> bool:
    """Whether counting ``model``'s prompt with ``tokenizer`` (default: the encoding the
    SDK picks for it) gives the count ``provider_host`` reports: only an OpenAI model that
    tiktoken knows (gpt-4o, gpt-4.1, gpt-5 and the o-series with ``o200k_base``; gpt-4 and
    gpt-3.5 with ``cl100k_base``), counted with that very encoding, served by OpenAI.
    Claude (no offline tokenizer), Llama, Qwen, Mistral and any model behind ollama,
    llama.cpp, vLLM or LM Studio are approximate."""
    if not model or not provider_host:
        return False
    host = provider_host.lower().rstrip(".")
    if host not in _OPENAI_HOSTS and not host.endswith(_OPENAI_HOST_SUFFIXES):
        return False
    own = encoding_name_for(model, default="")
    return bool(own) and (tokenizer is None or tokenizer == own)
