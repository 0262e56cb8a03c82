"""The query API's answers as pydantic models: each route's ``response_model``, so the
OpenAPI document describes every response. This module holds the base every response
model derives from (:class:`Public`, :class:`Links`) and the answers about reports and
runs; the aggregates are in :mod:`~ctxledger_collector.query.aggregate_responses`, the alerts
in :mod:`~ctxledger_collector.query.alert_responses` and the rejections in
:mod:`~ctxledger_collector.query.rejection_responses`.

The models describe the JSON the routes have always sent, field for field and in the
same order; the routes build plain dicts (``queries``, ``stats``) and FastAPI validates
them against these. Extra keys are forbidden, so a key the queries add without adding it
here fails loudly (in the tests) instead of being dropped from the answer. A key that is
sometimes absent (``links.dashboard``) is a ``NotRequired`` key of a TypedDict, never a
null.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from typing_extensions import NotRequired, TypedDict


class Links(TypedDict):
    """Deep links: the API's own, and the dashboard's when its URL is configured."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    run: str
    dashboard: NotRequired[str]


class Public(BaseModel):
    """A response model: exactly the keys the API sends."""

    model_config = ConfigDict(extra="forbid")


# --- reports ------------------------------------------------------------------------------


class ReceivedPublic(Public):
    """What the model server did with a tool result it was sent (stage ``received``,
    contract section 7), from the token count its response reported."""

    outcome: str = Field(
        description="kept, cut, dropped, cleared or unjudged: the result's fate at the server"
    )
    input_tokens: int | None = Field(description="input tokens the server reports it processed")
    counted_tokens: int | None = Field(
        description="input tokens counted in the request body as sent, with the tokenizer named"
    )
    exact: bool | None = Field(description="the tokenizer is the model's own (counts are exact)")
    policy: str | None = Field(
        description="what the server does with an over-long prompt: front_discard, "
        "middle_discard, token_truncate, refuse or provider_edit"
    )
    unreported: str | None = Field(description="why the server's count could not be judged")
    lost_tokens: int = Field(description="tokens of this result the server did not keep")
    lost_chars: int = Field(description="chars of this result the server did not keep")
    note: str | None = Field(description="the reason in words")


class StagePublic(Public):
    """One stage of a journey, as measured (item ids left out: they can be long)."""

    stage: str
    order: int
    request_id: str | None
    step: int | None
    chars: int
    canonical_chars: int | None = Field(
        description="chars of the JSON content without insignificant whitespace or escaping "
        "(what a transition's 'chars fell' compares when both stages have it); null for text"
    )
    bytes: int | None
    tokens: int | None
    tokenizer: str | None
    tokens_estimated: bool
    items: int | None
    priority_items: int | None
    json_valid: bool | None
    declared: bool
    strategy: str | None
    marker: bool = Field(description="the text the model sees says it was reduced")
    markers_found: list[str]
    ref: str | None
    observed_at: float
    trusted: bool = Field(description="false when OTLP dropped attributes of the span")
    source: str = Field(description="what the stage came from: ctxledger, genai, openinference…")
    telemetry_cut: str | None = Field(
        description="why the telemetry could not show this stage's text whole (not auditable)"
    )
    inferred: bool = Field(description="the tool call id was inferred (tool span without one)")
    received: ReceivedPublic | None = Field(
        default=None, description="the server's outcome, on a stage 'received' only"
    )


class TransitionPublic(Public):
    """What one stage lost relative to the stage before it, and why."""

    from_stage: str
    to_stage: str
    verdict: str
    lost_items: int
    lost_item_ids: list[str]
    lost_fields: list[str]
    lost_chars: int
    lost_tokens: int
    lost_priority_items: int
    reasons: list[str]


class ReportPublic(Public):
    """The verdict on one journey: one tool result (trace, tool call) in one request."""

    trace_id: str
    tool_call_id: str
    tool_name: str | None
    request_id: str | None
    agent_name: str | None
    step: int | None
    verdict: str
    source: str = Field(
        description="where the evidence came from: ctxledger (the SDK's stage spans), genai, "
        "genai_events, openllmetry, openinference; several joined by +"
    )
    layer: str | None = Field(description="where the worst finding sits in the pipeline")
    layer_name: str | None = Field(
        default=None,
        description="the layer's short name, as the layer filter and alert rules take it "
        "(model_server, before_request, request, ...)",
    )
    settled: bool = Field(description="false while later stages may still arrive")
    lost_items: int
    lost_item_ids: list[str]
    lost_fields: list[str]
    lost_chars: int
    lost_tokens: int | None = Field(
        description="null when unknown: the stages counted tokens with different encodings"
    )
    lost_tokens_unknown: str | None = Field(
        description="why lost_tokens is unknown (which stages counted with which encoding)"
    )
    lost_priority_items: int
    notes: list[str]
    stages: list[StagePublic] = Field(description="in pipeline order")
    transitions: list[TransitionPublic]
    last_observed_at: float
    judged_at: float
    links: Links = Field(
        description="the dashboard link of a still-missing result points at the step where "
        "it was first lost"
    )
    first_lost: bool = Field(
        description="the journey where its tool result was first lost (losing, and before "
        "every other losing journey of the same tool call in the run)"
    )
    still_missing: bool = Field(
        description="losing, but its result was first lost in an earlier journey: the same "
        "loss again, not a new one"
    )
    first_lost_step: int | None = Field(
        description="the step where the result was first lost (null when it was not lost)"
    )
    first_lost_request_id: str | None = Field(
        description="the request where the result was first lost (null when it was not "
        "lost, or first lost without a request)"
    )


class ReportsPublic(Public):
    reports: list[ReportPublic]
    total: int
    next_offset: int | None = Field(
        description="the offset of the next page; null on the last, and on a page asked "
        "for with after"
    )
    next_cursor: str | None = Field(
        description="pass as after for the next page (keyset: no row skipped or repeated "
        "as rows arrive); null on the last"
    )


# --- runs ---------------------------------------------------------------------------------


class RunPublic(Public):
    """One agent run (one trace) with its journeys' verdicts counted."""

    trace_id: str
    service_name: str | None
    agent_name: str | None
    first_seen: float
    last_seen: float
    journeys: int
    verdicts: dict[str, int] = Field(description="journeys by verdict")
    lost_results: int = Field(
        description="tool results lost in the run (silent, dropped or orphaned), each once"
    )
    worst_verdict: str
    sources: list[str] = Field(description="where the run's reports came from")
    links: Links


class RunsPublic(Public):
    runs: list[RunPublic]
    total: int
    next_offset: int | None = Field(
        description="the offset of the next page; null on the last, and on a page asked "
        "for with after"
    )
    next_cursor: str | None = Field(description="pass as after for the next page; null on the last")


class ManifestPublic(Public):
    """What one LLM request contained when it was sent."""

    request_id: str
    step: int | None
    model: str | None
    tokens: int | None
    tokenizer: JsonValue = Field(description="as the manifest span carried it")
    context_window: int | None
    window_used: float | None = Field(description="tokens / context_window")
    tool_call_ids: list[str] = Field(description="tool results the request carried")
    tool_calls: list[str] | None = Field(description="tool calls its assistant messages issued")
    calls_without_result: list[str]
    results_without_call: list[str]
    sdk_dropped_spans: int | None
    observed_at: float
    source: str
    conversation: str | None = Field(description="the conversation the request belongs to")
    telemetry_cut: str | None = Field(
        description="why the telemetry could not show what the request carried"
    )
    compaction: str | None = Field(
        default=None,
        description="the compaction the request follows, as its telemetry declared it (its "
        "kind and a digest: `claude_code.summary:…`, `compaction:…`, "
        "`gen_ai.conversation.compacted`); the first request after one carries a "
        "`compacted` stage for each result its summary replaced",
    )


class RequestPublic(Public):
    request_id: str | None
    manifest: ManifestPublic | None
    journeys: list[ReportPublic]


class StepPublic(Public):
    step: int | None
    verdict: str
    requests: list[RequestPublic]
    links: Links


class RunDetailPublic(RunPublic):
    """One run: its steps in order, each with its requests and their journeys."""

    steps: list[StepPublic]
