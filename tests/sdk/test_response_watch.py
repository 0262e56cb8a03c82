"""The response watch over real HTTP: a long stream is read through its ends only (the
usage at its end, Anthropic's at its start), a stream the caller stops reading or drops
unclosed still ends its watch, and the body reaches the caller byte for byte."""

from __future__ import annotations

import gc
import json
from types import SimpleNamespace
from typing import Any

import httpx2
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.sdk.received_kit import Answer, CannedServer, received_spans

import ctxledger
from ctxledger import semconv as sc
from ctxledger._response_watch import HEAD_CHUNKS, TAIL_BYTES, TAIL_CHUNKS, _sync_iter, _Watch

FRAMES = 6_000
#: The most one raw read of httpx2 returns (httpcore2 reads the socket 64 KiB at a time).
_SOCKET_READ_MAX = 64 * 1024
CHAT_BODY = {
    "model": "gpt-4o",
    "stream": True,
    "messages": [
        {"role": "user", "content": "Which orders shipped?"},
        {"role": "assistant", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "o", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": json.dumps(list(range(300)))},
    ],
}  # fmt: skip


def _frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chat_stream(frames: int, prompt_tokens: int) -> list[bytes]:
    piece = _frame({"choices": [{"index": 0, "delta": {"content": "词 "}}]})
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": frames, "total_tokens": 1}
    return [piece] * frames + [_frame({"choices": [], "usage": usage}), b"data: [DONE]\n\n"]


def anthropic_stream(frames: int, input_tokens: int) -> list[bytes]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {
        "input_tokens": input_tokens, "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0, "output_tokens": 1}}}  # fmt: skip
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    end = {"type": "message_delta", "usage": {"output_tokens": frames}}
    return [
        event("message_start", start),
        *[event("content_block_delta", delta)] * frames,
        event("message_delta", end),
        event("message_stop", {"type": "message_stop"}),
    ]


def read_stream(
    chunks: list[bytes], path: str, body: dict[str, Any], stop_after: int | None = None
) -> bytes:
    """Post ``body`` through the SDK's hooks to a server answering ``chunks``; the bytes
    read (all, or the first ``stop_after`` chunks before the caller stops)."""
    answer = Answer(chunks, content_type="text/event-stream")
    read: list[bytes] = []
    with (
        CannedServer(lambda path, body: answer) as server,
        httpx2.Client(event_hooks=ctxledger.httpx_event_hooks(), timeout=30) as http,
        http.stream("POST", server.url + path, json=body) as response,
    ):
        for chunk in response.iter_raw():
            read.append(chunk)
            if stop_after is not None and len(read) >= stop_after:
                break
    return b"".join(read)


def test_a_long_chat_streams_whole_and_its_usage_is_read_from_its_end(
    exporter: InMemorySpanExporter,
) -> None:
    chunks = chat_stream(FRAMES, prompt_tokens=777)
    assert sum(map(len, chunks)) > 4 * TAIL_BYTES  # far more than the watch keeps
    read = read_stream(chunks, "/v1/chat/completions", CHAT_BODY)
    assert read == b"".join(chunks)  # every byte handed on, in order
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_INPUT_TOKENS] == 777
    assert sc.RECEIVED_UNREPORTED not in span


def test_anthropics_input_count_is_read_from_the_start_of_a_long_stream(
    exporter: InMemorySpanExporter,
) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    read_stream(anthropic_stream(FRAMES, input_tokens=4_321), "/v1/messages", body)
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_INPUT_TOKENS] == 4_321


def test_a_stream_the_caller_stops_reading_is_reported_cut(
    exporter: InMemorySpanExporter,
) -> None:
    stop = HEAD_CHUNKS + TAIL_CHUNKS + 1
    # Each raw read is at most one socket read of 64 KiB; on a busy machine the server
    # runs ahead, so the stream must be longer than every read the caller makes.
    chunks = chat_stream(FRAMES, 777)
    frames = 2 * stop * _SOCKET_READ_MAX // len(chunks[0]) + 1
    read_stream(chat_stream(frames, 777), "/v1/chat/completions", CHAT_BODY, stop_after=stop)
    (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_UNREPORTED] == sc.UNREPORTED_STREAM_CUT


def test_a_stream_dropped_unread_and_unclosed_still_ends_its_watch(
    exporter: InMemorySpanExporter,
) -> None:
    answer = Answer(chat_stream(50, 777), content_type="text/event-stream")
    with (
        CannedServer(lambda path, body: answer) as server,
        httpx2.Client(event_hooks=ctxledger.httpx_event_hooks(), timeout=30) as http,
    ):
        request = http.build_request("POST", f"{server.url}/v1/chat/completions", json=CHAT_BODY)
        response = http.send(request, stream=True)
        del response
        gc.collect()
        (span,) = received_spans(exporter)
    assert span[sc.RECEIVED_UNREPORTED] == sc.UNREPORTED_STREAM_CUT


def test_a_long_body_read_in_few_large_chunks_keeps_its_end() -> None:
    """A busy reader gets a long stream coalesced into fewer chunks than the head keeps:
    the end (where the usage is) must still reach the worker, not only the first 16 KB."""
    submitted: list[Any] = []
    client = SimpleNamespace(recorder=SimpleNamespace(submit=submitted.append))
    watch = _Watch(client, {"request_id": "r", "kind": "chat", "host": "h", "agent_name": None,
                            "streamed": True}, keep_all=False)  # fmt: skip
    chunks = [b"a" * 70_000, b"b" * 70_000, b"c" * 70_000, b"d" * 70_000 + b"END"]
    stream = SimpleNamespace(_ctxledger_watch=watch, _ctxledger_inner=chunks)
    assert b"".join(_sync_iter(stream)) == b"".join(chunks)
    (job,) = submitted
    assert b"".join(job.head) == chunks[0]  # the first chunk covers the head
    assert job.tail == (chunks[-1],)  # the last 64 KB, the end included
