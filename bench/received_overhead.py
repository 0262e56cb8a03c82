"""What reading the server's usage (stage ``received``) costs the agent's thread.

Run from the repository root::

    .venv/bin/python bench/received_overhead.py

Two ``httpx2`` clients post the same Chat Completions request through an in-process
transport (the network is not what is measured): one with the SDK's request hook only
(the ``sent`` stage), one with the request and the response hook (``sent`` and
``received``). The difference of their median times per response, request sent and body
read whole on the caller's thread, is the cost of watching the response; the worker
thread that reads the counts off the agent's thread is not on it. Three bodies: a plain
JSON answer, a streamed answer of 400 ``data:`` chunks with its usage chunk, and a long
stream of 32 MiB for memory: the peak of Python allocations while it is read, with and
without the response hook (the watch keeps its first 8 and last 16 chunks, cut to 16 KiB
and 64 KiB when the body ends, never the whole). A benchmark: it prints numbers, asserts nothing.
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

import ctxledger

URL = "http://stand-in.invalid/v1/chat/completions"
REQUEST = {
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "Which orders shipped?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "o", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(list(range(200)))},
    ],
}
USAGE = {"prompt_tokens": 812, "completion_tokens": 40, "total_tokens": 852}
PLAIN = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok " * 60},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }
).encode()


def _chunk(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def stream_chunks(pieces: int, piece_text: str = "word ") -> Iterator[bytes]:
    """The frames of a streamed answer, each encoded once (what is timed is the reading
    of the body, not the making of it)."""
    piece = _chunk({"choices": [{"index": 0, "delta": {"content": piece_text}}]})
    for _ in range(pieces):
        yield piece
    yield _chunk({"choices": [], "usage": USAGE})
    yield b"data: [DONE]\n\n"


def transport(kind: str) -> httpx2.MockTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        if kind == "plain":
            # As a real transport answers: a body still to be read, not bytes at hand.
            return httpx2.Response(
                200, content=iter([PLAIN]), headers={"content-type": "application/json"}
            )
        pieces = 400 if kind == "stream" else 32 * 1024 * 1024 // 1024
        text = "word " if kind == "stream" else "x" * 1000
        return httpx2.Response(
            200,
            content=stream_chunks(pieces, text),
            headers={"content-type": "text/event-stream"},
        )

    return httpx2.MockTransport(answer)


def client(kind: str, watch_response: bool) -> httpx2.Client:
    hooks = ctxledger.httpx_event_hooks()
    if not watch_response:
        hooks = {"request": hooks["request"]}
    return httpx2.Client(transport=transport(kind), event_hooks=hooks)


def one_response(http: httpx2.Client, streamed: bool) -> None:
    if not streamed:
        http.post(URL, json=REQUEST).read()
        return
    with http.stream("POST", URL, json=REQUEST) as response:
        for _ in response.iter_bytes():
            pass


def median_ms(run: Callable[[], None], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def cost_row(kind: str, rounds: int) -> tuple[str, float, float]:
    streamed = kind != "plain"
    plain, watched = client(kind, False), client(kind, True)
    for http in (plain, watched):  # warm-up: the tokenizer, the classes, the caches
        for _ in range(20):
            one_response(http, streamed)
    base: list[float] = []
    hooked: list[float] = []
    for _ in range(9):  # interleaved blocks: drift hits both alike
        base.append(median_ms(lambda: one_response(plain, streamed), rounds))
        hooked.append(median_ms(lambda: one_response(watched, streamed), rounds))
    ctxledger.flush()
    return kind, statistics.median(base), statistics.median(hooked)


def peak_mib(watch_response: bool) -> float:
    http = client("long", watch_response)
    tracemalloc.start()
    one_response(http, True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ctxledger.flush()
    return peak / 2**20


def main() -> None:
    sdk = ctxledger.configure(service_name="bench", export=False, ledger="off")
    try:
        rows = [cost_row("plain", 200), cost_row("stream", 200)]
        print(f"{'response':<22}{'sent hook ms':>14}{'+ received ms':>15}{'cost ms':>10}")
        for kind, base, hooked in rows:
            label = "plain JSON" if kind == "plain" else "stream, 400 chunks"
            print(f"{label:<22}{base:>14.3f}{hooked:>15.3f}{hooked - base:>10.3f}")
        without, with_watch = peak_mib(False), peak_mib(True)
        print()
        print("32 MiB stream read in 1 KiB events, peak Python allocations:")
        print(f"  without the response hook {without:7.2f} MiB")
        print(f"  with the response hook    {with_watch:7.2f} MiB")
        stats = sdk.stats()
        print(f"\nspans dropped by the SDK: {stats.spans_dropped}")
    finally:
        sdk.shutdown()


if __name__ == "__main__":
    main()
