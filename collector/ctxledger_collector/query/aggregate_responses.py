"""The dashboards' aggregates as response models: ``/api/v1/stats/timeline``,
``/api/v1/stats/breakdown`` and ``/api/v1/tools/{tool}`` (the rules every response
model follows are in :mod:`~ctxledger_collector.query.responses`)."""

from __future__ import annotations

from pydantic import Field

from ctxledger_collector.query.responses import Public, ReportPublic


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
    tokens_unknown: int = Field(
        description="journeys whose lost tokens are unknown (stages counted with different "
        "encodings): lost_tokens leaves them out"
    )
    result_tokens_unknown: int = Field(
        description="lost results whose lost tokens are unknown: result_lost_tokens leaves them out"
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
    tokens_unknown: int = Field(
        description="journeys whose lost tokens are unknown (stages counted with different "
        "encodings): lost_tokens leaves them out"
    )
    result_tokens_unknown: int = Field(
        description="lost results whose lost tokens are unknown: result_lost_tokens leaves them out"
    )
    agents: dict[str, int]
    by_stage: list[StageLosses]
    recent_losses: list[ReportPublic]
