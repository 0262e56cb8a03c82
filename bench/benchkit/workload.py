"""Deterministic SDK-shaped spans: runs of steps, each step's tool results measured at
original, serialized, assembled and sent, and one request manifest per LLM request.

Layout of one run (one trace) of ``steps`` steps with ``CALLS_PER_STEP`` tool calls:
request ``k`` (``1 .. steps + 1``) has a manifest listing the results of the last
``HISTORY_STEPS`` steps; the calls of step ``k`` are measured at ``original`` and
``serialized`` in step ``k`` and at ``assembled`` and ``sent`` in request ``k + 1``.
That is ``17 * steps + 1`` spans per run. About 10 % of the results are truncated with a
marker at ``assembled`` (``declared``), about 3 % lose records silently at ``sent``
(``silent``); the rest arrive intact.

Everything but the wall-clock origin comes from the seed: span and trace ids, tool
call ids, sizes, hashes and fates. Timestamps end at the time of building, so the
journeys are recent for the collector's grace period.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from ctxledger import semconv as sc

SEED = 20240611
CALLS_PER_STEP = 4
# A request carries the results of the last few steps, as an agent whose context keeps
# a window of its history; listing every older result would make manifests O(n) each.
HISTORY_STEPS = 5
SPANS_PER_STEP = CALLS_PER_STEP * 4 + 1

_TOOLS = ("search_orders", "get_customer", "read_file", "sql_query", "web_fetch", "list_tickets")
_AGENTS = ("support-agent", "billing-agent", "coding-agent")
_FIELDS = ("id", "customer", "status", "region", "amount", "currency", "created_at", "note")
_STAGES = (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT)


@dataclass(frozen=True)
class StageFacts:
    """The measured facts of one tool result at one stage."""

    chars: int
    tokens: int
    item_ids: tuple[str, ...]
    sha256: str
    canonical_sha256: str
    canonical_chars: int
    declared: bool = False
    marker: bool = False


@dataclass(frozen=True)
class Workload:
    """The spans in emission order, and what a complete store of them holds."""

    spans: list[ReadableSpan]
    traces: int
    spans_per_trace: int
    tool_calls: int

    def span_keys(self) -> dict[int, tuple[str, ...]]:
        """span id -> the natural key the collector stores it under (see ``verify``)."""
        return {span.context.span_id: natural_key(span) for span in self.spans}


def natural_key(span: ReadableSpan) -> tuple[str, ...]:
    """(trace, call, stage) of a measurement, (trace, request) of a manifest."""
    attrs = span.attributes or {}
    trace_id = f"{span.context.trace_id:032x}"
    if sc.STAGE in attrs:
        return ("measurement", trace_id, str(attrs[sc.TOOL_CALL_ID]), str(attrs[sc.STAGE]))
    return ("manifest", trace_id, str(attrs[sc.REQUEST_ID]))


def steps_for(trace_spans: int) -> int:
    """Steps of a run of about ``trace_spans`` spans."""
    return max(1, round((trace_spans - 1) / SPANS_PER_STEP))


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator, so two builds are identical."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def _sha(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


def _journey(rng: random.Random) -> list[StageFacts]:
    """The four stages of one tool result: intact, truncated with a marker, or silent."""
    ids = tuple(f"ord-{rng.randrange(10**7):07d}" for _ in range(20))
    chars = rng.randrange(1_500, 30_000)
    canonical = _sha(rng)
    original = StageFacts(chars, chars // 4, ids, _sha(rng), canonical, chars - chars // 10)
    serialized = StageFacts(
        chars + 40, chars // 4 + 10, ids, _sha(rng), canonical, original.canonical_chars
    )
    fate = rng.random()
    if fate < 0.10:  # truncated at assembly, with a marker the model can see
        short = chars * 12 // 20
        cut = StageFacts(
            short, short // 4, ids[:12], _sha(rng), _sha(rng), short - short // 10, True, True
        )
        return [original, serialized, cut, cut]
    if fate < 0.13:  # records lost on the way out, nothing says so
        short = chars * 15 // 20
        cut = StageFacts(short, short // 4, ids[:15], _sha(rng), _sha(rng), short - short // 10)
        return [original, serialized, serialized, cut]
    return [original, serialized, serialized, serialized]


def _stage_attrs(
    stage: str,
    call_id: str,
    tool: str,
    agent: str,
    step: int,
    request_id: str | None,
    facts: StageFacts,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        sc.STAGE: stage,
        sc.STAGE_ORDER: sc.BUILTIN_STAGE_ORDER[stage],
        sc.TOOL_CALL_ID: call_id,
        sc.SIZE_CHARS: facts.chars,
        sc.SIZE_BYTES: facts.chars + facts.chars // 5,
        sc.CONTENT_SHA256: facts.sha256,
        sc.JSON_VALID: True,
        sc.TOOL_NAME: tool,
        sc.STEP: step,
        sc.AGENT_NAME: agent,
        sc.SIZE_TOKENS: facts.tokens,
        sc.TOKENIZER: "cl100k_base",
        sc.SIZE_ITEMS: len(facts.item_ids),
        sc.ITEMS_PRIORITY: 0,
        sc.CONTENT_CANONICAL_SHA256: facts.canonical_sha256,
        sc.SIZE_CANONICAL_CHARS: facts.canonical_chars,
        sc.ITEMS_IDS: list(facts.item_ids),
        sc.ITEMS_IDS_COMPLETE: True,
        sc.ITEMS_FIELDS: list(_FIELDS),
        sc.ITEMS_FIELDS_COMPLETE: True,
        sc.TRUNCATION_MARKER: facts.marker,
    }
    if request_id is not None:
        attrs[sc.REQUEST_ID] = request_id
    if facts.declared:
        attrs[sc.TRUNCATION_DECLARED] = True
        attrs[sc.TRUNCATION_STRATEGY] = "head_rows"
        attrs[sc.TRUNCATION_MARKERS_FOUND] = ["omitted"]
    return attrs


class _RunWriter:
    """Emits the spans of runs through a stock TracerProvider, on a seeded clock."""

    def __init__(self, rng: random.Random, total_steps: int, time_scale: float = 1.0) -> None:
        self.rng = rng
        self.time_scale = time_scale
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create(
                {
                    sc.SERVICE_NAME: "ctxledger-bench",
                    sc.SDK_NAME: "ctxledger",
                    sc.SDK_VERSION: "bench",
                }
            ),
            id_generator=SeededIds(rng),
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("ctxledger-bench")
        # Each step takes about a second and a half (times ``time_scale``); the last run
        # ends now.
        self.clock = time.time_ns() - int(total_steps * 1_500_000_000 * time_scale)

    def emit(self, parent: trace.Span, name: str, attrs: dict[str, Any]) -> None:
        start = self.clock
        self.clock += int(self.rng.randrange(50_000_000, 150_000_000) * self.time_scale)
        span = self.tracer.start_span(
            name, context=trace.set_span_in_context(parent), attributes=attrs, start_time=start
        )
        span.end(end_time=self.clock)

    def manifest(
        self, root: trace.Span, request_id: str, step: int, history: list[str], agent: str
    ) -> None:
        self.emit(
            root,
            sc.SPAN_MANIFEST,
            {
                sc.REQUEST_ID: request_id,
                sc.REQUEST_TOOL_CALL_IDS: list(history),
                sc.REQUEST_TOOL_CALLS: list(history),
                sc.STEP: step,
                sc.REQUEST_MODEL: "gpt-4o-2024-08-06",
                sc.AGENT_NAME: agent,
                sc.REQUEST_CONTEXT_WINDOW: 128_000,
                sc.REQUEST_TOKENS: 2_000 + 1_500 * len(history),
                sc.TOKENIZER: "cl100k_base",
                sc.SDK_DROPPED_SPANS: 0,
            },
        )

    def run(self, steps: int) -> None:
        rng = self.rng
        agent = rng.choice(_AGENTS)
        root = self.tracer.start_span(sc.SPAN_RUN, start_time=self.clock)
        requests = [f"req_{rng.randbytes(12).hex()}" for _ in range(steps + 1)]
        window: list[list[str]] = []  # the call ids of the last HISTORY_STEPS steps
        pending: list[tuple[str, str, list[StageFacts]]] = []
        for step in range(1, steps + 2):
            request = requests[step - 1]
            for call_id, tool, stages in pending:  # the previous step's results travel here
                for stage, facts in zip(_STAGES[2:], stages[2:], strict=True):
                    attrs = _stage_attrs(stage, call_id, tool, agent, step, request, facts)
                    self.emit(root, f"{sc.SPAN_MEASUREMENT} {stage}", attrs)
            self.manifest(root, request, step, [c for calls in window for c in calls], agent)
            if step > steps:
                break
            pending = []
            for _ in range(CALLS_PER_STEP):
                call_id, tool = f"call_{rng.randbytes(12).hex()}", rng.choice(_TOOLS)
                stages = _journey(rng)
                for stage, facts in zip(_STAGES[:2], stages[:2], strict=True):
                    attrs = _stage_attrs(stage, call_id, tool, agent, step, None, facts)
                    self.emit(root, f"{sc.SPAN_MEASUREMENT} {stage}", attrs)
                pending.append((call_id, tool, stages))
            window = [*window, [c for c, _, _ in pending]][-HISTORY_STEPS:]
        root.end(end_time=self.clock)

    def finish(self) -> list[ReadableSpan]:
        self.provider.shutdown()
        # The run span carries no contract attributes; the collector would ignore it.
        return [s for s in self.memory.get_finished_spans() if s.name != sc.SPAN_RUN]


def build(
    total_spans: int, trace_spans: int, seed: int = SEED, time_scale: float = 1.0
) -> Workload:
    """Whole runs of about ``trace_spans`` spans each, about ``total_spans`` in all, the
    last ending now; ``time_scale`` shrinks (< 1) or stretches the time they take."""
    steps = steps_for(trace_spans)
    per_trace = SPANS_PER_STEP * steps + 1
    traces = max(1, round(total_spans / per_trace))
    writer = _RunWriter(random.Random(seed), traces * steps, time_scale)
    for _ in range(traces):
        writer.run(steps)
    spans = writer.finish()
    return Workload(spans, traces, per_trace, traces * steps * CALLS_PER_STEP)
