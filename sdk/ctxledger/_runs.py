"""Agent runs and LLM requests as context, so measurements link up without hand-threaded ids.

A *run* is one trace: every measurement taken inside it shares the trace id. The run
counts LLM requests (its steps). Measuring assembled messages opens a *pending request*;
the next request body that leaves the process (the httpx hook) claims it, so the
``assembled`` and ``sent`` stages of one request carry the same request id.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from ctxledger import semconv
from ctxledger._client import get_client
from ctxledger._safety import raise_errors, report_failure


@dataclass
class RequestState:
    request_id: str
    step: int


@dataclass
class RunState:
    """Mutable state of one agent run, shared by every context that runs it."""

    agent_name: str | None = None
    parent: SpanContext | None = None
    model: str | None = None
    step: int = 0
    pending: RequestState | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    root: trace.Span | None = field(default=None, init=False, repr=False)
    """``parent`` as a span, made once: every measurement of the run hangs under it."""

    def __post_init__(self) -> None:
        self.root = NonRecordingSpan(self.parent) if self.parent is not None else None

    def open_request(self, request_id: str | None = None, step: int | None = None) -> RequestState:
        """The pending request, opened now unless one is already waiting."""
        with self.lock:
            if self.pending is None or request_id is not None:
                self.pending = RequestState(
                    request_id=request_id or new_request_id(),
                    step=step if step is not None else self.step + 1,
                )
            return self.pending

    def remember_model(self, model: str) -> None:
        """The model later measurements of this run count tokens for (agent thread only)."""
        with self.lock:
            self.model = model

    def claim_request(self) -> RequestState:
        """Take the pending request for a request body that is leaving now."""
        with self.lock:
            state = self.pending or RequestState(new_request_id(), self.step + 1)
            self.pending = None
            self.step = max(self.step, state.step)
            return state


_current_run: ContextVar[RunState | None] = ContextVar("ctxledger_run", default=None)
_current_tool_call: ContextVar[tuple[str, str | None] | None] = ContextVar(
    "ctxledger_tool_call", default=None
)


def new_request_id() -> str:
    return f"req-{uuid.uuid4().hex[:16]}"


def _fresh_parent() -> SpanContext:
    return SpanContext(
        trace_id=secrets.randbits(128) or 1,
        span_id=secrets.randbits(64) or 1,
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def current_run() -> RunState:
    """The run of this context. Without one, an implicit run is started here: its
    measurements share one trace until :func:`run` or :func:`new_run` starts another."""
    state = _current_run.get()
    if state is None:
        active = trace.get_current_span().get_span_context()
        state = RunState(parent=None if active.is_valid else _fresh_parent())
        _current_run.set(state)
    return state


def parent_span(state: RunState) -> trace.Span | None:
    """The span a measurement hangs under. A run started inside an application span
    follows the live context (joining the application's trace); a run started outside
    any span keeps its own root, so one run is always one trace."""
    return state.root


@contextlib.contextmanager
def run(agent_name: str | None = None) -> Iterator[RunState]:
    """One agent run: all measurements inside share a trace, steps count from 1.

    The run is a real ``ctxledger.run`` span (a child of the application's active span,
    if any), so tracing UIs show the measurements under it.
    """
    root = _start_run_span(agent_name)
    context = root.get_span_context() if root is not None else None
    parent = context if context is not None and context.is_valid else _fresh_parent()
    state = RunState(agent_name=agent_name, parent=parent)
    token = _current_run.set(state)
    try:
        yield state
    finally:
        _current_run.reset(token)
        if root is not None:
            root.end()


def _start_run_span(agent_name: str | None) -> trace.Span | None:
    try:
        attributes = {semconv.AGENT_NAME: agent_name} if agent_name else {}
        return get_client().tracer.start_span(semconv.SPAN_RUN, attributes=attributes)
    except Exception as error:  # a run without its span still groups measurements
        if raise_errors():
            raise
        report_failure("ctxledger.run", error)
        return None


def new_run(agent_name: str | None = None) -> RunState:
    """Start a new run in this context without a ``with`` block (e.g. per user message)."""
    state = RunState(agent_name=agent_name, parent=_fresh_parent())
    _current_run.set(state)
    return state


@contextlib.contextmanager
def tool_call(tool_call_id: str, tool_name: str | None = None) -> Iterator[None]:
    """Tell decorated tools which call they are executing."""
    token = _current_tool_call.set((tool_call_id, tool_name))
    try:
        yield
    finally:
        _current_tool_call.reset(token)


def current_tool_call() -> tuple[str, str | None] | None:
    return _current_tool_call.get()


@contextlib.contextmanager
def llm_request(request_id: str | None = None, step: int | None = None) -> Iterator[RequestState]:
    """Make one LLM request explicit: measurements inside carry its id and step."""
    state = current_run()
    request = state.open_request(request_id, step)
    yield request
