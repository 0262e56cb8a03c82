"""The query API's answers as pydantic models: each route's ``response_model``, so the
OpenAPI document describes every response.

The models describe the JSON the routes have always sent, field for field and in the
same order; the routes build plain dicts (``queries``, ``stats``) and FastAPI validates
them against these. Extra keys are forbidden, so a key the queries add without adding it
here fails loudly (in the tests) instead of being dropped from the answer. A key that is
sometimes absent (``links.dashboard``) is a ``NotRequired`` key of a TypedDict, never a
null.
"""

from __future__ import annotations

from typing import Any

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


class StagePublic(Public):
    """One stage of a journey, as measured (item ids left out: they can be long)."""

    stage: str
    order: int
    request_id: str | None
    step: int | None
    chars: int
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
    settled: bool = Field(description="false while later stages may still arrive")
    lost_items: int
    lost_item_ids: list[str]
    lost_fields: list[str]
    lost_chars: int
    lost_tokens: int
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


# --- stats --------------------------------------------------------------------------------


class TimelinePoint(Public):
    start: float
    verdict: str
    journeys: int
    lost_results: int = Field(
        description="tool results first lost in these journeys: each lost result once"
    )


class TimelinePublic(Public):
    """Journeys by verdict in equal time slices of [since, until)."""

    bucket_seconds: int | float | None
    since: float | None
    until: float | None
    points: list[TimelinePoint]


class BreakdownRow(Public):
    name: str | None
    journeys: int
    verdicts: dict[str, int]
    losing: int = Field(description="silent, dropped and orphaned journeys")
    lost_items: int = Field(description="summed over every journey, whatever its verdict")
    lost_tokens: int
    lost_results: int = Field(
        description="lost tool results (one tool call in one run with a silent, dropped or "
        "orphaned journey), each counted once, at the journey where it was first lost"
    )
    result_lost_items: int = Field(
        description="items the lost results lost, each result once (at its first lost journey)"
    )
    result_lost_tokens: int = Field(
        description="tokens the lost results lost, each result once (at its first lost journey)"
    )


class BreakdownPublic(Public):
    """Per tool or agent: journeys by verdict and what was lost, worst first."""

    by: str
    rows: list[BreakdownRow]


class StageLosses(Public):
    stage: str = Field(description='a stage name, or "request" for dropped and orphaned')
    from_stage: str | None
    losses: int
    verdicts: dict[str, int]
    lost_items: int
    lost_tokens: int


class ToolProfilePublic(Public):
    """One tool across runs: how often and how much it loses, and at which stage."""

    tool: str
    journeys: int
    sampled: bool = Field(
        description="true when by_stage was read from only the most recent 10,000 of the "
        "tool's journeys that are not intact (the counts are always exact)"
    )
    verdicts: dict[str, int]
    losing: int
    lost_items: int
    lost_tokens: int
    lost_results: int = Field(
        description="lost tool results (one tool call in one run with a silent, dropped or "
        "orphaned journey), each counted once, at the journey where it was first lost"
    )
    result_lost_items: int = Field(
        description="items the lost results lost, each result once (at its first lost journey)"
    )
    result_lost_tokens: int = Field(
        description="tokens the lost results lost, each result once (at its first lost journey)"
    )
    agents: dict[str, int]
    by_stage: list[StageLosses]
    recent_losses: list[ReportPublic]


# --- alerts -------------------------------------------------------------------------------


class NotificationPublic(Public):
    """One message to one sink, and where its delivery stands."""

    id: int
    webhook_id: str
    batch_id: str
    status: str
    rule: str
    agent: str | None
    tool: str | None
    sink: str
    sink_type: str
    delivery: str
    attempts: int
    last_error: str | None
    created_at: float
    delivered_at: float | None
    next_attempt_at: float | None
    payload: dict[str, Any]


class AlertGroupPublic(Public):
    rule: str
    agent: str | None
    tool: str | None
    severity: str
    state: str
    first_event_at: float
    last_event_at: float
    last_notified_at: float | None


class SinkPublic(Public):
    name: str
    type: str


class AlertsPublic(Public):
    notifications: list[NotificationPublic]
    total: int
    next_offset: int | None
    groups: list[AlertGroupPublic]
    rules: list[dict[str, Any]] = Field(description="the alert rules in force")
    sinks: list[SinkPublic]


# --- rejections ---------------------------------------------------------------------------


class RejectionPublic(Public):
    """One span refused at ingest; its ids as received (cut to 64 characters)."""

    id: int = Field(description="the row's id: newer rejections have larger ids")
    trace_id: str
    span_id: str
    service_name: str | None
    reason: str = Field(description="one of the fixed reason codes (see reasons)")
    detail: str = Field(description="what exactly was wrong")
    rejected_at: float = Field(description="unix seconds of the (latest) rejection")


class RejectionsPublic(Public):
    rejections: list[RejectionPublic]
    total: int = Field(description="rejections kept that match the filters")
    next_before: int | None = Field(description="pass as before= for the next page")
    kept: int = Field(description="how many of the newest rejections the collector keeps")
    reasons: list[str] = Field(description="every reason code there is")
