"""What the agent's thread hands the measuring worker: frozen snapshots only. A job never
holds live agent state, so what the worker measures cannot depend on its timing."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue


class StageJob(NamedTuple):
    """One tool result at one stage, as captured on the agent's thread.

    A named tuple rather than a frozen dataclass: the agent's thread builds one per
    measurement, and a tuple is built in a third of the time.
    """

    stage: str
    order: int
    text: str
    tool_call_id: str
    tool_name: str | None
    request_id: str | None
    step: int | None
    agent_name: str | None
    encoding: str
    start_ns: int
    """``time.time_ns()`` when the agent's thread measured."""
    declared: bool = False
    strategy: str | None = None
    marker: bool | None = None
    ref: str | None = None
    parent: trace.Span | None = None
    context: otel_context.Context | None = None
    extra: Mapping[str, AttributeValue] = MappingProxyType({})


@dataclass(frozen=True)
class ManifestJob:
    """What one LLM request contained when it left the process."""

    request_id: str
    step: int | None
    tool_call_ids: Sequence[str]
    tool_calls: Sequence[str] | None
    agent_name: str | None
    model: str | None = None
    body_text: str | None = None
    encoding: str = "cl100k_base"
    context_window: int | None = None
    parent: trace.Span | None = None
    context: otel_context.Context | None = None
    start_ns: int = field(default_factory=time.time_ns)


@dataclass(frozen=True)
class RequestJob:
    """A request body as it left the process; decoded and parsed on the worker, not on
    the agent's thread (bytes and str are immutable, so holding them is a snapshot).

    Only snapshots: the worker never reads or writes the agent's run state. ``model`` is
    the model the caller named; ``run_model`` the run's model when the body was sent.
    """

    body: str | bytes
    request_id: str
    step: int
    agent_name: str | None
    model: str | None
    run_model: str | None
    default_encoding: str
    context_windows: Mapping[str, int]
    parent: trace.Span | None = None
    context: otel_context.Context | None = None
    start_ns: int = field(default_factory=time.time_ns)
    read_response: bool = False
    """The httpx hooks will read this request's response: keep its segments for the
    ``received`` stage."""


@dataclass(frozen=True)
class ResponseJob:
    """What the agent's thread kept of one response: its first and last bytes as the
    caller read them (references to the chunks, never a copy of the whole body)."""

    request_id: str
    kind: str
    """Which API answered (``ctxledger._received_usage.KIND_*``)."""
    host: str
    agent_name: str | None
    head: tuple[bytes, ...]
    tail: tuple[bytes, ...]
    streamed: bool
    cut: bool = False
    """The caller stopped reading, or reading failed, before the body ended."""
    unreadable: bool = False
    """Compressed in a way the kept ends cannot be decoded from."""
    content_encoding: str = ""
    """The body's ``Content-Encoding``; ``head`` then holds the whole compressed body."""
    proxy_evicted_tokens: int | None = None
    """A compacting proxy in front of the server declared, in its response headers, that
    it cut the middle of this request (contextpaw: ``X-ContextPaw-Compacted: true``, with
    ``X-ContextPaw-Evicted-Tokens``); None when none did."""
    parent: trace.Span | None = None
    context: otel_context.Context | None = None
    start_ns: int = field(default_factory=time.time_ns)
