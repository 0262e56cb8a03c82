"""Collector settings: ``CTXLEDGER_*`` environment variables, then defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from ctxledger.verdicts import Tolerances
from ctxledger_collector.ops.forward_settings import ForwardSettings
from ctxledger_collector.ops.ingest_settings import IngestSettings
from ctxledger_collector.ops.keys import KeySet
from ctxledger_collector.storage.database_url import DEFAULT_DATABASE_URL, normalize_database_url


class Settings(IngestSettings, ForwardSettings):
    """Every setting can be given as ``CTXLEDGER_<NAME>`` (e.g. ``CTXLEDGER_DATABASE_URL``)."""

    model_config = SettingsConfigDict(env_prefix="CTXLEDGER_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: sqlite:///path.db or postgresql://user@host/db "
        "(postgres:// and postgresql:// mean postgresql+psycopg://)",
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
    api_keys: str = Field(
        default="",
        description="ingest keys, comma-separated, each the key or its sha256:<hex> digest; "
        "when set, POST /v1/traces and /v1/logs need Authorization: Bearer <key>",
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
    malloc_arenas: int = Field(
        default=2,
        ge=0,
        description="glibc malloc arenas of the serving process (and its workers): fewer "
        "keep the peak memory under load lower and steadier; 0 leaves glibc's default (8 "
        "per CPU); an explicit MALLOC_ARENA_MAX wins",
    )
    malloc_mmap_threshold: int = Field(
        default=1024 * 1024,
        ge=0,
        le=32 * 1024 * 1024,
        description="bytes from which glibc serves an allocation with a mapping of its own, "
        "returned to the kernel when freed (fixed, so large request bodies never stay "
        "resident in the heap); 0 leaves glibc's moving threshold; an explicit "
        "MALLOC_MMAP_THRESHOLD_ wins",
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
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description="SQLite: FULL syncs every commit to disk before the export is answered "
        "(a 200 survives power loss); NORMAL syncs at checkpoints only (faster; an OS crash "
        "may lose the last acknowledged batches)",
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
        description="on SIGTERM, how long requests in flight may still finish; an export "
        "still unfinished 0.5 s before it is answered 503 + Retry-After, then the process exits",
    )

    def tolerances(self) -> Tolerances:
        return Tolerances(
            chars_ratio=self.tolerance_chars_ratio,
            chars_floor=self.tolerance_chars_floor,
            tokens_ratio=self.tolerance_tokens_ratio,
            tokens_floor=self.tolerance_tokens_floor,
            incomplete_after_s=self.incomplete_after_s,
        )

    @field_validator("database_url")
    @classmethod
    def _postgres_spellings(cls, value: str) -> str:
        return normalize_database_url(value)

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
