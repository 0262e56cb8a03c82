"""The OpenAI Agents SDK (the ``[openai-agents]`` extra).

:class:`CtxledgerTracingProcessor` reads the SDK's own trace spans:

* a **function span** (a tool ran) gives the tool's return value: ``original``;
* a **response span** (Responses API) or **generation span** (Chat Completions) gives
  the input the model was called with, after ``call_model_input_filter`` and any
  session or handoff filter: every tool result in it is measured as ``assembled`` and
  ``sent``, with the request manifest (results present, calls issued).

Function spans carry no call id, so each is matched to a ``function_call`` of the model
answer before it by tool name and arguments. The spans must carry data
(``RunConfig(trace_include_sensitive_data=True)``, the default); ctxledger exports only
sizes, counts and hashes of it unless content capture is on. Install once, and run the
agent inside a ctxledger run::

    agents.add_trace_processor(CtxledgerTracingProcessor())
    with ctxledger.run("support-agent"):
        result = await Runner.run(agent, question)

Do not add the httpx ``sent`` hook to the same client as well: the processor already
measures every model request once.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import FunctionSpanData, GenerationSpanData, ResponseSpanData

from ctxledger._api import measure, measure_messages, measure_request
from ctxledger._safety import never_raises

__all__ = ["CtxledgerTracingProcessor"]

#: (call id, tool name, arguments) of a function call the model issued.
_Call = tuple[str, str, str]


def _plain(value: Any) -> Any:
    """Pydantic models (the SDK's input and output items) as JSON-ready values."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _responses_calls(response: Any) -> list[_Call]:
    calls: list[_Call] = []
    for item in _plain(getattr(response, "output", None)) or ():
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("call_id"):
            calls.append((str(item["call_id"]), str(item.get("name")), str(item.get("arguments"))))
    return calls


def _chat_calls(output: Any) -> list[_Call]:
    calls: list[_Call] = []
    for message in _plain(output) or ():
        for call in (message.get("tool_calls") or ()) if isinstance(message, dict) else ():
            function = call.get("function") or {}
            if call.get("id"):
                calls.append(
                    (str(call["id"]), str(function.get("name")), str(function.get("arguments")))
                )
    return calls


class CtxledgerTracingProcessor(TracingProcessor):
    """Feeds the Agents SDK's function and model spans to ctxledger. Never raises."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, list[_Call]] = {}

    def on_trace_start(self, trace: Trace) -> None:
        return None

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            self._calls.pop(trace.trace_id, None)

    def on_span_start(self, span: Span[Any]) -> None:
        return None

    def on_span_end(self, span: Span[Any]) -> None:
        self._span_ended(span)

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None

    @never_raises(None)
    def _span_ended(self, span: Span[Any]) -> None:
        data = span.span_data
        if isinstance(data, FunctionSpanData):
            self._tool_ended(span.trace_id, data)
        elif isinstance(data, ResponseSpanData) and data.input is not None:
            model = getattr(data.response, "model", None)
            items = data.input if not isinstance(data.input, str) else []
            self._model_called(model, {"input": _plain(items)})
            self._remember(span.trace_id, _responses_calls(data.response))
        elif isinstance(data, GenerationSpanData) and data.input is not None:
            self._model_called(data.model, {"messages": _plain(list(data.input))})
            self._remember(span.trace_id, _chat_calls(data.output))

    def _model_called(self, model: str | None, body: dict[str, Any]) -> None:
        listed = body.get("input", body.get("messages")) or []
        measure_messages(listed, model=model)
        measure_request({"model": model, **body} if model else body, model=model)

    def _remember(self, trace_id: str, calls: list[_Call]) -> None:
        if calls:
            with self._lock:
                self._calls.setdefault(trace_id, []).extend(calls)

    def _tool_ended(self, trace_id: str, data: FunctionSpanData) -> None:
        call = self._match(trace_id, data.name, data.input)
        if call is not None and data.output is not None:
            measure("original", data.output, tool_call_id=call[0], tool_name=call[1])

    def _match(self, trace_id: str, name: str, arguments: str | None) -> _Call | None:
        """The oldest unmatched call of this tool, with these arguments if any has them."""
        with self._lock:
            waiting = self._calls.get(trace_id, [])
            named = [c for c in waiting if c[1] == name]
            exact = [c for c in named if arguments is not None and c[2] == arguments]
            candidates = exact or named
            if not candidates:
                return None
            waiting.remove(candidates[0])
            return candidates[0]
