"""Collector settings: ``CTXLEDGER_*`` environment variables, then defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ctxledger.verdicts import Tolerances
from ctxledger_collector.admission import AdmissionLimits
from ctxledger_collector.forwarding.destinations import Destination, parse_destinations
from ctxledger_collector.forwarding.limits import ForwardLimits
from ctxledger_collector.forwarding.retry import RetryPolicy
from ctxledger_collector.keys import KeySet
from ctxledger_collector.otlp_spans import DecodeLimits


class Settings(BaseSettings):
    """Every setting can be given as ``CTXLEDGER_<NAME>`` (e.g. ``CTXLEDGER_DATABASE_URL``)."""

    model_config = SettingsConfigDict(env_prefix="CTXLEDGER_", extra="ignore")

    database_url: str = Field(
        default="sqlite:///./ctxledger.db",
        description="SQLAlchemy URL: sqlite:///path.db or postgresql+psycopg://user@host/db",
    )
    host: str = "127.0.0.1"
    port: int = 4318
    incomplete_after_s: float = Field(
        default=120.0,
        description="grace period before a journey missing its later stages is judged incomplete",
    )
    sweep_interval_s: float = Field(
        default=10.0, description="how often journeys past the grace period are re-judged"
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="remove runs whose newest span is older than this many days (with "
        "their measurements, reports and counters); unset: keep everything",
    )
    retention_interval_s: float = Field(
        default=3600.0, gt=0, description="how often the retention sweep runs"
    )
    partition_runs: int = Field(
        default=100_000,
        ge=1,
        description="PostgreSQL: run ids per partition of measurements and reports "
        "(partitions are created ahead by the collector, dropped once retention empties them)",
    )
    tolerance_chars_ratio: float = 0.02
    tolerance_chars_floor: int = 16
    tolerance_tokens_ratio: float = 0.02
    tolerance_tokens_floor: int = 4
    max_body_bytes: int = Field(
        default=16 * 1024 * 1024, description="largest accepted request body (as sent)"
    )
    max_decompressed_bytes: int = Field(
        default=64 * 1024 * 1024, description="largest body after gzip decompression"
    )
    api_keys: str = Field(
        default="",
        description="ingest keys, comma-separated, each the key or its sha256:<hex> digest; "
        "when set, POST /v1/traces needs Authorization: Bearer <key>",
    )
    read_keys: str = Field(
        default="",
        description="read keys, comma-separated, each the key or its sha256:<hex> digest; "
        "when set, the query API (/api/v1) and /metrics need Authorization: Bearer <key>",
    )
    metrics_need_read_key: bool = Field(
        default=True,
        description="with read keys set, /metrics needs one too; false leaves /metrics open "
        "(for a scraper without credentials)",
    )
    auto_migrate: bool | None = Field(
        default=None,
        description="apply migrations on start (default: yes for SQLite, no for PostgreSQL)",
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
        description="an export still being stored this long after it arrived stores no "
        "further chunk: its remaining spans are rejected (reason request_deadline, counted "
        "and listed), the rest is kept; the first chunk is always stored",
    )
    malloc_arenas: int = Field(
        default=2,
        ge=0,
        description="glibc malloc arenas of the serving process (and its workers): fewer "
        "keep the peak memory under load lower and steadier; 0 leaves glibc's default (8 "
        "per CPU); an explicit MALLOC_ARENA_MAX wins",
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
    rejections_kept: int = Field(
        default=10_000,
        ge=0,
        description="rejected spans kept for GET /api/v1/rejections (the newest; 0 keeps "
        "none, the metric still counts them)",
    )
    alerts_file: str | None = Field(
        default=None,
        description="alert rules (YAML or TOML); without it: alert on silent, dropped and "
        "orphaned journeys to the log",
    )
    alert_log_file: str | None = Field(
        default=None,
        description="without alerts_file: the built-in rules' log sink appends each "
        "notification to this file (one JSON line) instead of stderr",
    )
    alert_lease_s: float = Field(
        default=30.0, description="how long a worker owns a notification it is delivering"
    )
    alert_tick_s: float = Field(default=1.0, description="how often the alert worker runs")
    alert_settle_s: float = Field(
        default=5.0,
        description="events wait this long before they are notified, so out-of-order "
        "stages can correct a verdict first (0 notifies in the ingest transaction)",
    )
    alert_retry_base_s: float = Field(
        default=2.0, description="first retry delay; doubles per attempt up to max_backoff_s"
    )
    store_message_content: bool = Field(
        default=False,
        description="keep the text of the tool results derived from GenAI / OpenInference "
        "spans (at most 65,536 chars each); off: only sizes, counts, digests, ids and field "
        "names are kept, the content is parsed in memory and dropped",
    )
    dashboard_url: str | None = Field(
        default=None, description="public URL of the dashboard, for deep links in the API"
    )
    forward_to: str = Field(
        default="",
        description="forward every accepted export, unchanged, to these OTLP/HTTP traces "
        "endpoints (full URLs, e.g. http://phoenix:6006/v1/traces): comma-separated, or a "
        'JSON list of URLs and {"url", "headers", "name"} objects',
    )
    forward_headers: str = Field(
        default="",
        description="headers sent to every forwarding destination: name=value pairs, "
        "comma-separated, values percent-encoded (as OTEL_EXPORTER_OTLP_HEADERS), or a JSON "
        "object",
    )
    forward_queue_max_requests: int = Field(
        default=1_000,
        ge=1,
        description="per destination: requests waiting to be forwarded; past this the "
        "oldest is dropped",
    )
    forward_queue_max_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="per destination: body bytes waiting to be forwarded; past this the "
        "oldest are dropped",
    )
    forward_timeout_s: float = Field(
        default=10.0, gt=0, description="one forwarding attempt's time limit"
    )
    forward_retry_base_s: float = Field(
        default=0.5,
        gt=0,
        description="first forwarding retry's delay; doubles per retry up to "
        "forward_max_backoff_s (a longer Retry-After is honored)",
    )
    forward_max_backoff_s: float = Field(
        default=30.0, gt=0, description="the forwarding backoff stops growing here"
    )
    forward_max_elapsed_s: float = Field(
        default=300.0,
        gt=0,
        description="a request still failing this long after its first attempt is given up",
    )
    forward_flush_timeout_s: float = Field(
        default=5.0,
        ge=0,
        description="at shutdown, how long queued requests may still be forwarded; what is "
        "left then is dropped (counted)",
    )

    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description="SQLite: FULL syncs every commit to disk before the export is answered "
        "(a 200 survives power loss); NORMAL syncs at checkpoints only (faster; an OS crash "
        "may lose the last acknowledged batches)",
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
    ready_cache_s: float = Field(
        default=2.0, ge=0, description="how long /readyz reuses its last write probe"
    )
    ready_min_free_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="/readyz says unavailable when the SQLite file's or the spool's disk "
        "has less free space than this",
    )
    shutdown_timeout_s: int = Field(
        default=10,
        ge=0,
        description="on SIGTERM, how long requests in flight may still finish; then they "
        "are cancelled and the process exits",
    )

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

    def forward_destinations(self) -> list[Destination]:
        """Raises :class:`ForwardConfigError` on a setting that cannot be used."""
        return parse_destinations(self.forward_to, self.forward_headers)

    def forward_limits(self) -> ForwardLimits:
        return ForwardLimits(
            queue_max_requests=self.forward_queue_max_requests,
            queue_max_bytes=self.forward_queue_max_bytes,
            timeout_s=self.forward_timeout_s,
            retry=RetryPolicy(
                base_s=self.forward_retry_base_s,
                max_backoff_s=self.forward_max_backoff_s,
                max_elapsed_s=self.forward_max_elapsed_s,
            ),
            flush_timeout_s=self.forward_flush_timeout_s,
        )

    def tolerances(self) -> Tolerances:
        return Tolerances(
            chars_ratio=self.tolerance_chars_ratio,
            chars_floor=self.tolerance_chars_floor,
            tokens_ratio=self.tolerance_tokens_ratio,
            tokens_floor=self.tolerance_tokens_floor,
            incomplete_after_s=self.incomplete_after_s,
        )

    @field_validator("api_keys", "read_keys")
    @classmethod
    def _keys_parse(cls, value: str) -> str:
        KeySet.parse(value)  # a malformed sha256: entry stops the start, with its reason
        return value

    def api_key_set(self) -> KeySet:
        return KeySet.parse(self.api_keys, "CTXLEDGER_API_KEYS")

    def read_key_set(self) -> KeySet:
        return KeySet.parse(self.read_keys, "CTXLEDGER_READ_KEYS")

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def should_auto_migrate(self) -> bool:
        return self.is_sqlite if self.auto_migrate is None else self.auto_migrate
