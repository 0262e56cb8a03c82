"""The ingest settings: admission, body and span limits, the spool, rejections kept."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ctxledger_collector.ingest.admission import AdmissionLimits
from ctxledger_collector.ingest.body_files import BodyFiles
from ctxledger_collector.ingest.otlp_spans import DecodeLimits


class IngestSettings(BaseSettings):
    """Part of :class:`ctxledger_collector.ops.settings.Settings`."""

    model_config = SettingsConfigDict(env_prefix="CTXLEDGER_", extra="ignore")

    max_body_bytes: int = Field(
        default=16 * 1024 * 1024, description="largest accepted request body (as sent)"
    )
    max_decompressed_bytes: int = Field(
        default=64 * 1024 * 1024, description="largest body after gzip decompression"
    )
    retry_after_s: int = Field(default=5, description="Retry-After sent with a 503")
    ingest_max_requests: int = Field(
        default=2,
        ge=1,
        description="export requests read, decoded and stored at once; more wait, then 503",
    )
    ingest_max_inflight_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1,
        description="total body bytes (as sent) of the requests in flight; a larger body "
        "is admitted only alone",
    )
    ingest_admission_wait_s: float = Field(
        default=0.5,
        ge=0,
        description="how long a request waits for a slot and bytes before it is refused",
    )
    ingest_busy_retry_after_s: int = Field(
        default=1, ge=0, description="Retry-After sent with a 503 when ingest is busy"
    )
    ingest_body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="an admitted request's body must arrive within this (else 408), so a "
        "stalled client cannot hold a slot",
    )
    ingest_chunk_spans: int = Field(
        default=1_024,
        ge=1,
        description="a large export is decoded and stored this many spans at a time (each "
        "chunk its own transaction, all committed before the answer), so its memory is bounded",
    )
    ingest_request_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="an export still being stored this long after it arrived is kept "
        "whole in the ingest spool (fsynced) and answered 200, the replayer stores the "
        "rest; without a spool that can take it, it is stored in the request to its end",
    )
    max_spans_per_request: int = Field(
        default=100_000, ge=1, description="spans one export may hold; more is answered 413"
    )
    max_span_attributes: int = Field(
        default=1_024,
        ge=1,
        description="attributes one span (or one of its events) may carry; a span with more "
        "is rejected alone (too_many_attributes)",
    )
    max_span_events: int = Field(
        default=1_024,
        ge=0,
        description="events one span may carry; a span with more is rejected alone",
    )
    max_value_chars: int = Field(
        default=8 * 1024 * 1024,
        ge=1,
        description="longest string (code points) or bytes value, attribute key or name; a "
        "span with a longer one is rejected alone (value_too_long)",
    )
    max_value_items: int = Field(
        default=100_000,
        ge=1,
        description="most entries in one array or key/value list value; a span with more "
        "is rejected alone (value_too_long)",
    )
    max_value_depth: int = Field(
        default=16,
        ge=0,
        description="how deeply arrays and key/value lists may nest in one attribute value "
        "(an array of strings is 1); a span nested deeper is rejected alone "
        "(nesting_too_deep)",
    )
    rejections_kept: int | None = Field(
        default=None,
        ge=0,
        description="at most this many rejected spans kept for GET /api/v1/rejections (the "
        "newest; 0 keeps none, the metric still counts them); unset: no bound by count, "
        "rows leave by age only, so every refused span stays listed that long",
    )
    rejections_max_age_s: float = Field(
        default=7 * 86_400.0,
        gt=0,
        description="how long a rejected span stays listed at GET /api/v1/rejections "
        "(looked for once a minute; default 7 days)",
    )
    ingest_spool_dir: str = Field(
        default="",
        description="where exports accepted during a database outage wait on disk (off: "
        "no spool, answer 503); default: beside the SQLite file (<file>-spool), or under "
        "the user's cache folder per PostgreSQL database",
    )
    ingest_spool_max_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=0,
        description="bytes the ingest spool may hold (bodies as received); past this, 503",
    )

    read_bodies_from: list[str] = Field(
        default_factory=list,
        description="directories request bodies written to files may be read from (Claude "
        "Code's OTEL_LOG_RAW_API_BODIES=file:DIR); a JSON list. A file outside them, "
        "links resolved, is never read",
    )

    def body_files(self) -> BodyFiles:
        return BodyFiles(tuple(self.read_bodies_from), self.max_decompressed_bytes)

    def admission_limits(self) -> AdmissionLimits:
        return AdmissionLimits(
            max_requests=self.ingest_max_requests,
            max_bytes=self.ingest_max_inflight_bytes,
            wait_s=self.ingest_admission_wait_s,
        )

    def decode_limits(self) -> DecodeLimits:
        return DecodeLimits(
            max_spans=self.max_spans_per_request,
            max_attributes=self.max_span_attributes,
            max_events=self.max_span_events,
            max_value_chars=self.max_value_chars,
            max_value_items=self.max_value_items,
            max_depth=self.max_value_depth,
        )
