"""LangChain and LangGraph (the ``[langchain]`` extra).

:class:`CtxledgerCallbackHandler` measures each tool result twice:

* ``original`` when the tool ends (``on_tool_end``: the ``ToolMessage`` the tool
  produced, keyed by its ``tool_call_id``);
* ``assembled`` when a chat model is invoked (``on_chat_model_start``: the messages
  list exactly as the model receives it, after any ``trim_messages`` or pre-model hook).

A result that a trimmer removed, or a ``ToolMessage`` left without the ``AIMessage``
that called it (``trim_messages(strategy="last")``, langchain#33245), is then visible
as ``dropped`` or ``orphaned``. Pass the handler in the run's config::

    graph.invoke(state, config={"callbacks": [CtxledgerCallbackHandler()]})

:func:`trim_keeping_pairs` is the remedy: it shrinks a message list by replacing the
content of the oldest tool results with ctxledger's emergency-trim placeholder, keeps
every message (so every call keeps its result) and declares each replacement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, ToolMessage, convert_to_openai_messages

from ctxledger._api import measure, measure_messages
from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger._safety import never_raises
from ctxledger.remedies.trimming import emergency_trim

__all__ = ["CtxledgerCallbackHandler", "to_openai_messages", "trim_keeping_pairs"]


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the OpenAI chat dicts ctxledger reads."""
    converted = convert_to_openai_messages(list(messages))
    return [m for m in converted if isinstance(m, dict)]


def _model_name(kwargs: dict[str, Any], metadata: dict[str, Any] | None) -> str | None:
    params = kwargs.get("invocation_params") or {}
    for value in (
        params.get("model"),
        params.get("model_name"),
        (metadata or {}).get("ls_model_name"),
    ):
        if isinstance(value, str) and value:
            return value
    return None


class CtxledgerCallbackHandler(BaseCallbackHandler):
    """Measures tool results at ``original`` (tool end) and ``assembled`` (chat model
    start). Never raises into the agent; runs inline, in the run's context."""

    run_inline = True
    raise_error = False

    def __init__(self, *, model: str | None = None) -> None:
        super().__init__()
        self._model = model
        self._call_ids: dict[UUID, tuple[str, str | None]] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._assembled(messages, self._model or _model_name(kwargs, metadata))

    @never_raises(None)
    def _assembled(self, batches: list[list[BaseMessage]], model: str | None) -> None:
        for batch in batches:
            measure_messages(to_openai_messages(batch), model=model)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        call_id = kwargs.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            name = (serialized or {}).get("name")
            self._call_ids[run_id] = (call_id, name if isinstance(name, str) else None)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._original(output, run_id)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._call_ids.pop(run_id, None)

    @never_raises(None)
    def _original(self, output: Any, run_id: UUID) -> None:
        started = self._call_ids.pop(run_id, None)
        if isinstance(output, ToolMessage):
            call_id = output.tool_call_id or (started[0] if started else None)
            name = output.name or (started[1] if started else None)
            value: Any = output.content
        else:
            call_id, name = started if started else (None, None)
            value = output
        if call_id:
            measure("original", value, tool_call_id=call_id, tool_name=name)


def trim_keeping_pairs(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    model: str | None = None,
) -> list[BaseMessage]:
    """``messages`` within about ``max_tokens`` without breaking a tool call/result pair:
    the oldest tool results' content becomes the emergency-trim placeholder (each one
    declared to ctxledger), every message stays in place. The input is not modified.
    On any failure the messages come back unchanged."""
    return _trim_keeping_pairs(messages, max_tokens, model) or list(messages)


@never_raises(None)
def _trim_keeping_pairs(
    messages: Sequence[BaseMessage], max_tokens: int, model: str | None
) -> list[BaseMessage]:
    result = emergency_trim(to_openai_messages(messages), target_tokens=max_tokens, model=model)
    trimmed = set(result.trimmed)
    return [
        m.model_copy(update={"content": EMERGENCY_TRIM_PLACEHOLDER})
        if isinstance(m, ToolMessage) and m.tool_call_id in trimmed
        else m
        for m in messages
    ]
