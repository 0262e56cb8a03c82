"""Frozen domain records the rules take in and give out. Standard library only."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ctxledger import semconv


@dataclass(frozen=True)
class Measurement:
    """The size of one tool result at one stage, as a stage measurement span carries it."""

    trace_id: str
    tool_call_id: str
    stage: str
    order: int
    chars: int
    request_id: str | None = None
    tool_name: str | None = None
    agent_name: str | None = None
    step: int | None = None
    bytes: int | None = None
    tokens: int | None = None
    tokenizer: str | None = None
    tokens_estimated: bool = False
    canonical_chars: int | None = None
    items: int | None = None
    item_ids: tuple[str, ...] | None = None
    ids_complete: bool = True
    fields: tuple[str, ...] | None = None
    fields_complete: bool = True
    priority_items: int | None = None
    sha256: str | None = None
    canonical_sha256: str | None = None
    json_valid: bool | None = None
    declared: bool = False
    strategy: str | None = None
    marker: bool = False
    markers_found: tuple[str, ...] = ()
    ref: str | None = None
    dropped_attributes: int = 0
    observed_at: float = 0.0
    span_id: str | None = None
    source: str = semconv.SOURCE_CTXLEDGER
    """Where the measurement came from (``semconv.SOURCE_*``)."""
    telemetry_cut: str | None = None
    """Why the telemetry could not show this stage's text whole (None: it could)."""
    inferred: bool = False
    """The tool call id was inferred (the tool span carried none)."""
    received: str | None = None
    """At stage ``received`` only: what the model server's count says became of this
    result (one outcome of :mod:`ctxledger.verdicts.received`). The server reports one
    count for the whole request, so the stage states what the result lost instead of
    measuring it; None everywhere else."""
    lost_chars: int = 0
    """With ``received``: the chars of the result the server did not read (estimated)."""
    lost_tokens: int = 0
    """With ``received``: the tokens of the result the server did not read."""
    note: str | None = None
    """With ``received``: why the stage gives no verdict, or what the rule assumed; on a
    stage the collector derived, what its report should say of it."""

    @property
    def sees_marker(self) -> bool:
        """Whether the text the model sees at this stage says it was reduced."""
        return self.marker or bool(self.markers_found)

    @property
    def trusted(self) -> bool:
        """False when OTLP reported attributes of this span dropped in transit."""
        return self.dropped_attributes == 0


@dataclass(frozen=True)
class ReceivedRecord:
    """What the model server says it read of one request: a ``received`` span.

    Counts are kept as the span gave them (negative or absurd ones too): the rule, not
    the reader, says why such a count gives no verdict. The segments are the request as
    sent, in order: one per message, each tool-result block its own.
    """

    trace_id: str
    request_id: str
    input_tokens: int | None = None
    counted_tokens: int | None = None
    tokenizer: str | None = None
    exact: bool = False
    policy: str | None = None
    declared: bool = False
    marked: bool = False
    segment_call_ids: tuple[str, ...] = ()
    segment_tokens: tuple[int, ...] = ()
    segment_chars: tuple[int, ...] = ()
    segment_roles: tuple[str, ...] = ()
    keep_tokens: int | None = None
    cleared_call_ids: tuple[str, ...] = ()
    unreported: str | None = None
    step: int | None = None
    agent_name: str | None = None
    observed_at: float = 0.0
    span_id: str | None = None
    source: str = semconv.SOURCE_CTXLEDGER


@dataclass(frozen=True)
class Manifest:
    """What one LLM request actually contained when it was sent."""

    trace_id: str
    request_id: str
    step: int | None = None
    tool_call_ids: tuple[str, ...] = ()
    tool_calls: tuple[str, ...] | None = None
    tokens: int | None = None
    tokenizer: str | None = None
    context_window: int | None = None
    model: str | None = None
    agent_name: str | None = None
    sdk_dropped_spans: int | None = None
    observed_at: float = 0.0
    span_id: str | None = None
    source: str = semconv.SOURCE_CTXLEDGER
    conversation: str | None = None
    """The conversation the request belongs to; the request that follows a call is the
    next one of the issuing request's conversation (None: the run's default one)."""
    sequence: int | None = None
    """The request's place in its conversation; None orders it by its step."""
    issued_calls: tuple[str, ...] | None = None
    """The tool calls the request's response issued (None: not known)."""
    telemetry_cut: str | None = None
    """Why the telemetry could not show what the request carried (None: it could)."""
    compaction: str | None = None
    """The compaction the request follows, as its telemetry names it (None: none it
    declares). Requests naming the same compaction lie on the same side of it; the first
    of them does not carry the results its runtime summarized away."""

    @property
    def position(self) -> int | None:
        """Where the request stands in its conversation: its sequence, else its step."""
        return self.sequence if self.sequence is not None else self.step

    @property
    def conversation_key(self) -> str:
        return self.conversation or ""

    @cached_property
    def results(self) -> frozenset[str]:
        """The tool results present, for membership tests (a long run lists many)."""
        return frozenset(self.tool_call_ids)

    @cached_property
    def calls(self) -> frozenset[str] | None:
        """The tool calls issued, when the manifest says (None: not measured)."""
        return None if self.tool_calls is None else frozenset(self.tool_calls)


@dataclass(frozen=True)
class Tolerances:
    """How much a size may fall between two stages before it counts as loss.

    A fall counts when it exceeds both the ratio of the earlier size and the floor.
    Sizes are compared on canonical chars when both stages carry them, so escaping and
    whitespace never count; otherwise on chars and tokens.
    """

    chars_ratio: float = 0.02
    chars_floor: int = 16
    tokens_ratio: float = 0.02
    tokens_floor: int = 4
    incomplete_after_s: float = 120.0


@dataclass(frozen=True)
class Transition:
    """The comparison of two consecutive stages of one journey."""

    from_stage: str
    to_stage: str
    verdict: str
    lost_items: int = 0
    lost_item_ids: tuple[str, ...] = ()
    lost_fields: tuple[str, ...] = ()
    lost_chars: int = 0
    lost_tokens: int = 0
    lost_priority_items: int = 0
    reasons: tuple[str, ...] = ()

    @property
    def lost(self) -> bool:
        return self.verdict != semconv.VERDICT_INTACT


@dataclass(frozen=True)
class Report:
    """The verdict on one journey: one tool result (trace, tool call) within one request."""

    trace_id: str
    tool_call_id: str
    request_id: str | None
    verdict: str
    tool_name: str | None = None
    agent_name: str | None = None
    step: int | None = None
    stages: tuple[Measurement, ...] = ()
    transitions: tuple[Transition, ...] = ()
    lost_items: int = 0
    lost_item_ids: tuple[str, ...] = ()
    lost_fields: tuple[str, ...] = ()
    lost_chars: int = 0
    lost_tokens: int = 0
    lost_priority_items: int = 0
    settled: bool = True
    notes: tuple[str, ...] = field(default=())
    source: str = semconv.SOURCE_CTXLEDGER
    """Where the evidence came from: one ``semconv.SOURCE_*`` name, or several joined by
    ``+`` (sorted)."""
    layer: str | None = None
    """Where the worst finding sits in the pipeline (None when nothing was found)."""
    lost_tokens_unknown: str | None = None
    """Why the tokens lost are not known (stages counted with different encodings):
    ``lost_tokens`` then holds only what could be compared, and says nothing."""

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.trace_id, self.tool_call_id, self.request_id)
