"""Watch a response's body as the caller reads it, on the agent's thread, for stage
``received``.

The response hook replaces the response's byte stream with one that hands every chunk on
unchanged and keeps references to its first and last few chunks (never a copy, never a
read ahead, never the whole of a long stream), cut to the first :data:`HEAD_BYTES` and
the last :data:`TAIL_BYTES` when the body ends.
When the body ends, or the caller stops reading it, one :class:`ResponseJob` goes to the
worker, which reads the server's counts from those ends. A compressed body that is not
streamed (httpx buffers it whole anyway) is kept up to :data:`MAX_ENCODED_BYTES` so the
worker can decompress it; a compressed stream cannot be read from its ends and is reported
as unreadable at once.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final

from opentelemetry import context as otel_context

from ctxledger._client import Client
from ctxledger._jobs import ResponseJob
from ctxledger._runs import current_run, parent_span
from ctxledger._safety import report_failure

HEAD_BYTES: Final = 16_384
TAIL_BYTES: Final = 65_536
#: While a body is read, its ends are kept by chunk count (a C-level append per chunk);
#: when it ends they are cut to :data:`HEAD_BYTES` and :data:`TAIL_BYTES`.
HEAD_CHUNKS: Final = 8
TAIL_CHUNKS: Final = 16
MAX_ENCODED_BYTES: Final = 8 * 1024 * 1024


def _first_bytes(chunks: list[bytes], limit: int) -> tuple[bytes, ...]:
    """The first chunks until ``limit`` bytes are covered."""
    kept, size = [], 0
    for chunk in chunks:
        if size >= limit:
            break
        kept.append(chunk)
        size += len(chunk)
    return tuple(kept)


def _last_bytes(chunks: deque[bytes], limit: int) -> tuple[bytes, ...]:
    """The last chunks until ``limit`` bytes are covered."""
    kept: list[bytes] = []
    size = 0
    for chunk in reversed(chunks):
        if size >= limit:
            break
        kept.append(chunk)
        size += len(chunk)
    return tuple(reversed(kept))


class _Watch:
    """The ends of one body, and the job they become."""

    __slots__ = ("client", "done", "fields", "head", "head_left", "keep_all", "tail")

    def __init__(self, client: Client, fields: dict[str, Any], keep_all: bool) -> None:
        self.client = client
        self.fields = fields
        self.head: list[bytes] = []
        self.head_left = MAX_ENCODED_BYTES
        self.tail: deque[bytes] = deque(maxlen=TAIL_CHUNKS)
        self.done = False
        self.keep_all = keep_all

    def keep(self, chunk: bytes) -> None:
        """A compressed body, kept whole up to :data:`MAX_ENCODED_BYTES`."""
        if self.head_left > 0:
            self.head.append(chunk)
            self.head_left -= len(chunk)
        elif self.head:  # past the bound: its ends cannot be decoded
            self.fields["unreadable"] = True
            self.head.clear()

    def ended(self) -> None:
        """The body was read to its end (the last item of the chunk iterator)."""
        self.finish(cut=False)

    def finish(self, cut: bool) -> None:
        if self.done:
            return
        self.done = True
        head: tuple[bytes, ...]
        tail: tuple[bytes, ...]
        try:
            if self.keep_all:
                head, tail = tuple(self.head), ()
            else:
                head = _first_bytes(self.head, HEAD_BYTES)
                # A busy reader gets a long body in few large chunks: all may sit in the
                # head, and then the body's end is the end of the head's rest.
                rest = self.tail or deque(self.head[len(head) :])
                tail = _last_bytes(rest, TAIL_BYTES)
            self.head, self.tail = [], deque()
            self.client.recorder.submit(ResponseJob(head=head, tail=tail, cut=cut, **self.fields))
        except Exception as error:  # never into the agent
            report_failure("ctxledger response watch", error)


def _sync_iter(self: Any) -> Iterator[bytes]:
    """The body's chunks, unchanged. Uncompressed, each chunk costs two C-level calls and
    no Python frame: the first :data:`HEAD_CHUNKS` go to the head, the rest through a
    bounded deque, and the iterator's last step ends the watch. A read that fails or
    stops early ends it at ``close``."""
    watch: _Watch = self._ctxledger_watch
    inner = iter(self._ctxledger_inner)
    if watch.keep_all:
        return _kept_whole(watch, inner)
    return itertools.chain(
        itertools.filterfalse(watch.head.append, itertools.islice(inner, HEAD_CHUNKS)),
        itertools.filterfalse(watch.tail.append, inner),
        iter(watch.ended, None),  # calls ended() once; its None stops the iterator
    )


def _kept_whole(watch: _Watch, inner: Iterator[bytes]) -> Iterator[bytes]:
    try:
        for chunk in inner:
            watch.keep(chunk)
            yield chunk
    except BaseException:
        watch.finish(cut=True)
        raise
    watch.finish(cut=False)


async def _async_iter(self: Any) -> AsyncIterator[bytes]:
    watch: _Watch = self._ctxledger_watch
    keep_all = watch.keep_all
    head, tail = watch.head.append, watch.tail.append
    heading = HEAD_CHUNKS
    try:
        async for chunk in self._ctxledger_inner:
            if keep_all:
                watch.keep(chunk)
            elif heading:
                head(chunk)
                heading -= 1
            else:
                tail(chunk)
            yield chunk
    except BaseException:
        watch.finish(cut=True)
        raise
    watch.finish(cut=False)


def _close(self: Any) -> None:
    self._ctxledger_watch.finish(cut=True)  # no-op once the body ended
    self._ctxledger_inner.close()


async def _aclose(self: Any) -> None:
    self._ctxledger_watch.finish(cut=True)
    await self._ctxledger_inner.aclose()


def _collected(self: Any) -> None:
    """A body dropped unread and unclosed still ends its watch (as cut)."""
    watch = getattr(self, "_ctxledger_watch", None)
    if watch is not None and not watch.done:
        watch.finish(cut=True)


@functools.lru_cache(maxsize=16)
def _watched_class(bases: tuple[type, ...]) -> type:
    """A stream class that is an instance of what httpx checks (its own Sync/Async
    ByteStream, whichever httpx-compatible package made the response)."""
    methods: dict[str, Callable[..., Any]] = {}
    for base in bases:
        if base.__name__ == "SyncByteStream":
            methods.update(__iter__=_sync_iter, close=_close)
        else:
            methods.update(__aiter__=_async_iter, aclose=_aclose)
    methods["__del__"] = _collected
    return type("CtxledgerWatchedStream", bases, methods)


@functools.lru_cache(maxsize=64)
def _watched_for(stream_type: type) -> type | None:
    """The watched class for a response stream's type; None when it is neither httpx
    stream kind (then its body cannot be watched)."""
    names = ("SyncByteStream", "AsyncByteStream")
    bases = tuple(c for c in stream_type.__mro__ if c.__name__ in names)
    return _watched_class(bases) if bases else None


#: The response headers the watch reads, lower case.
_READ_HEADERS: Final = frozenset(
    {"content-type", "content-encoding", "x-contextpaw-compacted", "x-contextpaw-evicted-tokens"}
)
_READ_RAW: Final = frozenset(name.encode() for name in _READ_HEADERS)


def read_headers(headers: Any) -> dict[str, str]:
    """The headers the watch reads, lower-cased names, in one pass over the raw list
    (``Headers.get`` walks the whole list in Python on every call)."""
    raw = getattr(headers, "raw", None)
    if raw is None:  # not httpx's Headers: ask for each
        return {name: value for name in _READ_HEADERS if (value := headers.get(name))}
    found: dict[str, str] = {}
    for name, value in raw:
        lowered = name.lower()
        if lowered in _READ_RAW:
            found[lowered.decode()] = value.decode("latin-1")
    return found


def proxy_evicted_tokens(headers: dict[str, str]) -> int | None:
    """The tokens a compacting proxy (contextpaw) says it evicted from the request's middle
    (0 when it says so without a number); None when no proxy declared a compaction."""
    if headers.get("x-contextpaw-compacted", "").strip().lower() != "true":
        return None
    evicted = headers.get("x-contextpaw-evicted-tokens", "").strip()
    return int(evicted) if evicted.isdecimal() and len(evicted) < 12 else 0


def watch_response(client: Client, response: Any, request_id: str, kind: str) -> None:
    """Watch ``response``'s body for its ``received`` stage (called by the response hook,
    before httpx reads the body)."""
    headers = read_headers(response.headers)
    content_type = headers.get("content-type", "")
    streamed = "event-stream" in content_type or "ndjson" in content_type
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding == "identity":
        encoding = ""
    run = current_run()
    fields: dict[str, Any] = {
        "request_id": request_id,
        "kind": kind,
        "host": response.request.url.host,
        "agent_name": run.agent_name,
        "streamed": streamed,
        "content_encoding": encoding,
        "proxy_evicted_tokens": proxy_evicted_tokens(headers),
        "parent": parent_span(run),
        "context": otel_context.get_current(),
        "start_ns": time.time_ns(),
    }
    stream = response.stream
    stream_type: type = type(stream)
    kind_of_stream = _watched_for(stream_type)
    watch = _Watch(client, fields, keep_all=bool(encoding))
    if (encoding and streamed) or kind_of_stream is None:
        fields["unreadable"] = True
        watch.finish(cut=False)
        return
    watched: Any = object.__new__(kind_of_stream)
    watched._ctxledger_inner = stream
    watched._ctxledger_watch = watch
    response.stream = watched
