"""Stage ``received`` from the servers beyond OpenAI's own API, through the SDK's httpx
hooks over real HTTP: ollama's native ``/api/chat`` (plain and streamed NDJSON), llama.cpp's
``/completion``, Anthropic's context editing (``applied_edits``) against the provider
stand-in; Anthropic's cached counts, and the answers no stand-in gives (no usage, bad
counts, a body that is not JSON, a cut stream) from a server that answers exact bytes.
A bad answer gives a span with the reason and no count, and never raises into the agent."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import ollama
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.sdk.received_kit import Answer, CannedServer, received_spans

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.provider import ProviderStandIn

RECORDS = json.dumps([{"id": f"ord-{i}", "note": f"订单 {i}"} for i in range(60)])
OLLAMA_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Answer from the tools."},
    {"role": "user", "content": "Which orders shipped?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "orders", "arguments": {}}}]},
    {"role": "tool", "content": RECORDS},
    {"role": "user", "content": "Summarise them."},
]  # fmt: skip


def _http() -> httpx2.Client:
    return httpx2.Client(event_hooks=ctxledger.httpx_event_hooks(), timeout=30)


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_native_chat_reports_prompt_eval_count(
    exporter: InMemorySpanExporter, stream: bool
) -> None:
    """ollama drops the oldest messages over ``num_ctx`` and answers 200: only
    ``prompt_eval_count`` (in the closing object of a stream) shows it."""
    body = {"model": "llama3.2", "messages": OLLAMA_MESSAGES, "stream": stream,
            "options": {"num_ctx": 300}}  # fmt: skip
    with ProviderStandIn() as provider, _http() as http:
        answer = http.post(f"{provider.url}/api/chat", json=body)
    lines = [json.loads(line) for line in answer.text.splitlines() if line.strip()]
    reported = lines[-1]["prompt_eval_count"]
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_INPUT_TOKENS] == reported <= 300
    assert span[sc.RECEIVED_COUNTED_TOKENS] > 300  # what left the process, whole
    assert span[sc.RECEIVED_POLICY] == sc.POLICY_FRONT_DISCARD
    assert span[sc.RECEIVED_DECLARED] is False
    assert span[sc.RECEIVED_SEGMENT_ROLES][0] == "system"
    assert sc.RECEIVED_UNREPORTED not in span


@pytest.mark.parametrize("stream", [False, True])
def test_ollamas_own_client_through_the_hooks(exporter: InMemorySpanExporter, stream: bool) -> None:
    """The ``ollama`` package passes its keyword arguments to its ``httpx.Client``: the
    SDK's hooks go in as with the openai and anthropic clients."""
    with ProviderStandIn() as provider:
        client = ollama.Client(host=provider.url, event_hooks=ctxledger.httpx_event_hooks())
        options = {"num_ctx": 300}
        if stream:
            parts = list(client.chat("llama3.2", OLLAMA_MESSAGES, stream=True, options=options))
            reported = parts[-1].prompt_eval_count
        else:
            reported = client.chat("llama3.2", OLLAMA_MESSAGES, options=options).prompt_eval_count
    (span,) = received_spans(exporter)
    assert reported is not None and span[sc.RECEIVED_INPUT_TOKENS] == reported <= 300
    assert span[sc.RECEIVED_POLICY] == sc.POLICY_FRONT_DISCARD
    assert isinstance(client._client, httpx.Client)  # plain httpx, not httpx2


def test_llama_cpp_completion_reports_tokens_evaluated_and_truncated(
    exporter: InMemorySpanExporter,
) -> None:
    body = {"prompt": "Orders: " + RECORDS, "n_keep": 16, "n_predict": 8}
    with ProviderStandIn(context_window=200) as provider, _http() as http:
        answer = http.post(f"{provider.url}/completion", json=body).json()
    (span,) = received_spans(exporter)
    assert answer["truncated"] is True
    assert span[sc.RECEIVED_INPUT_TOKENS] == answer["tokens_evaluated"]
    assert span[sc.RECEIVED_POLICY] == sc.POLICY_TOKEN_TRUNCATE
    assert span[sc.RECEIVED_DECLARED] is True
    assert span[sc.RECEIVED_COUNTED_TOKENS] > answer["tokens_evaluated"]


def test_anthropic_context_editing_declares_the_cleared_results(
    exporter: InMemorySpanExporter,
) -> None:
    """``clear_tool_uses_20250919``: the server clears the oldest tool results, leaves a
    placeholder the model sees, and lists the edit in ``context_management.applied_edits``."""
    uses = [f"toolu_{i}" for i in range(4)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Which orders shipped?"}]
    for use in uses:
        messages += [
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": use, "name": "orders", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use, "content": RECORDS}]},
        ]  # fmt: skip
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 500},
            "keep": {"type": "tool_uses", "value": 1}}  # fmt: skip
    with ProviderStandIn() as provider, _http() as http:
        client = anthropic.Anthropic(
            base_url=provider.anthropic_base_url, api_key="x", http_client=http, max_retries=0
        )
        answer = client.beta.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=messages,  # type: ignore[arg-type]
            betas=["context-management-2025-06-27"], context_management={"edits": [edit]},
        )  # fmt: skip
    (span,) = received_spans(exporter)
    management = answer.context_management
    assert management is not None and management.applied_edits
    cleared = sum(e.cleared_tool_uses for e in management.applied_edits)  # type: ignore[union-attr]
    assert cleared == 3
    assert span[sc.RECEIVED_POLICY] == sc.POLICY_PROVIDER_EDIT
    assert span[sc.RECEIVED_DECLARED] is True and span[sc.RECEIVED_MARKED] is True
    assert span[sc.RECEIVED_INPUT_TOKENS] == answer.usage.input_tokens


def _anthropic_answer(usage: dict[str, Any]) -> Answer:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": usage}  # fmt: skip
    return Answer([json.dumps(body).encode()])


def test_anthropic_cached_tokens_count_as_read(exporter: InMemorySpanExporter) -> None:
    """Anthropic's ``input_tokens`` leaves out what was read from and written to the
    cache: the three together are what the server read, or every cached request would
    look like a loss."""
    usage = {"input_tokens": 12, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 40,
             "output_tokens": 3}  # fmt: skip
    body = {"model": "claude-sonnet-4-5", "max_tokens": 8,
            "messages": [{"role": "user", "content": RECORDS}]}  # fmt: skip
    with CannedServer(lambda path, body: _anthropic_answer(usage)) as server, _http() as http:
        http.post(f"{server.url}/v1/messages", json=body)
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_INPUT_TOKENS] == 12 + 900 + 40


def _chat(usage: Any) -> bytes:
    choice = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": "ok"},
    }
    body: dict[str, Any] = {"id": "c1", "object": "chat.completion", "model": "gpt-4o"}
    body["choices"] = [choice]
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


#: Bad answer -> (the bytes, the content type, the reason the span must give).
BAD_ANSWERS: dict[str, tuple[list[bytes], str, str]] = {
    "no usage": ([_chat(None)], "application/json", sc.UNREPORTED_NO_USAGE),
    "negative count": ([_chat({"prompt_tokens": -5})], "application/json",
                       sc.UNREPORTED_INVALID_COUNT),
    "count as text": ([_chat({"prompt_tokens": "900"})], "application/json",
                      sc.UNREPORTED_INVALID_COUNT),
    "absurd count": ([_chat({"prompt_tokens": 10**9})], "application/json",
                     sc.UNREPORTED_INVALID_COUNT),
    "not JSON": ([b"<html>502 Bad Gateway</html>"], "text/html", sc.UNREPORTED_NO_USAGE),
    "stream cut": ([b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"o"}}]}\n\n'],
                   "text/event-stream", sc.UNREPORTED_STREAM_CUT),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_a_bad_answer_gives_the_reason_and_no_count(
    exporter: InMemorySpanExporter, case: str
) -> None:
    chunks, content_type, reason = BAD_ANSWERS[case]
    answer = Answer(chunks, content_type=content_type)
    stream = content_type == "text/event-stream"
    body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": RECORDS}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    with CannedServer(lambda path, body: answer) as server, _http() as http:
        read = http.post(f"{server.url}/v1/chat/completions", json=body)  # never raises
    assert read.status_code == 200
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_UNREPORTED] == reason, span
    # An absurd count is sent as reported, with the reason: the rule never judges by it.
    assert (sc.RECEIVED_INPUT_TOKENS in span) == (case == "absurd count")
    assert span[sc.RECEIVED_COUNTED_TOKENS] > 0  # the request's own count is still there


def _ollama_answer(prompt_eval_count: int, headers: dict[str, str]) -> Answer:
    body = {"model": "llama3.2", "created_at": "2026-12-06T00:00:00Z", "done": True,
            "message": {"role": "assistant", "content": "ok"}, "done_reason": "stop",
            "prompt_eval_count": prompt_eval_count, "eval_count": 2}  # fmt: skip
    return Answer([json.dumps(body).encode()], headers=headers)


@pytest.mark.parametrize(
    ("headers", "declared"),
    [
        ({"X-ContextPaw": "1", "X-ContextPaw-Compacted": "true",
          "X-ContextPaw-Evicted-Tokens": "812"}, True),
        ({"X-ContextPaw": "1", "X-ContextPaw-Compacted": "true",
          "X-ContextPaw-Evicted-Tokens": "many"}, True),
        ({"X-ContextPaw": "1", "X-ContextPaw-Compacted": "false"}, False),
    ],
)  # fmt: skip
def test_a_compacting_proxy_declares_its_middle_cut(
    exporter: InMemorySpanExporter, headers: dict[str, str], declared: bool
) -> None:
    """contextpaw in front of ollama evicts the middle of an over-long prompt, leaves a
    marker the model reads and says so in its headers: the server's count is of what the
    proxy kept, and the reduction is declared, not ollama's silent front discard."""
    body = {"model": "llama3.2", "messages": OLLAMA_MESSAGES, "stream": False}
    answer = _ollama_answer(180, headers)
    with CannedServer(lambda path, body: answer) as server, _http() as http:
        http.post(f"{server.url}/api/chat", json=body)
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_INPUT_TOKENS] == 180
    if declared:
        assert span[sc.RECEIVED_POLICY] == sc.POLICY_MIDDLE_DISCARD
        assert span[sc.RECEIVED_DECLARED] is True and span[sc.RECEIVED_MARKED] is True
    else:
        assert span[sc.RECEIVED_POLICY] == sc.POLICY_FRONT_DISCARD
        assert span[sc.RECEIVED_DECLARED] is False


@pytest.mark.parametrize("server", ["llama.cpp", "ollama truncate false"])
def test_a_refused_request_gives_no_received_stage(
    exporter: InMemorySpanExporter, server: str
) -> None:
    """Current llama.cpp servers (400 ``exceed_context_size_error``) and ollama asked not
    to truncate refuse an over-long prompt: nothing was read, nothing lost, no stage."""
    if server == "llama.cpp":
        path, body = "/completion", {"prompt": "Orders: " + RECORDS, "n_predict": 8}
    else:
        path = "/api/chat"
        body = {"model": "llama3.2", "messages": OLLAMA_MESSAGES, "stream": False,
                "truncate": False, "options": {"num_ctx": 300}}  # fmt: skip
    with ProviderStandIn(context_window=200, refuse_over_window=True) as provider, _http() as http:
        answer = http.post(provider.url + path, json=body)
    assert answer.status_code == 400
    assert received_spans(exporter) == []
