"""The rejections answer as response models: ``/api/v1/rejections``, the spans refused
at ingest (the rules every response model follows are in
:mod:`~ctxledger_collector.query.responses`)."""

from __future__ import annotations

from pydantic import Field

from ctxledger_collector.query.responses import Public


class RejectionPublic(Public):
    """One span refused at ingest; its ids as received (cut to 64 characters)."""

    id: int = Field(description="the row's id: newer rejections have larger ids")
    trace_id: str
    span_id: str
    service_name: str | None
    reason: str = Field(description="one of the fixed reason codes (see reasons)")
    detail: str = Field(description="what exactly was wrong")
    rejected_at: float = Field(description="unix seconds of the (latest) rejection")
    replayed: bool = Field(
        description="refused while the spool replayed an export acknowledged during a "
        "database outage (its client was never told)"
    )


class RejectionsPublic(Public):
    rejections: list[RejectionPublic]
    total: int = Field(description="rejections kept that match the filters")
    next_before: int | None = Field(description="pass as before= for the next page")
    kept: int | None = Field(
        description="how many of the newest rejections the collector keeps; null: no bound "
        "by count (CTXLEDGER_REJECTIONS_KEPT unset), they leave by age only"
    )
    max_age_s: float = Field(
        description="how long a rejection stays listed (CTXLEDGER_REJECTIONS_MAX_AGE_S)"
    )
    reasons: list[str] = Field(description="every reason code there is")
