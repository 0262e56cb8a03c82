"""The forwarding settings (``CTXLEDGER_FORWARD_*``): where accepted exports go next."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ctxledger_collector.forwarding.destinations import Destination, parse_destinations
from ctxledger_collector.forwarding.limits import ForwardLimits
from ctxledger_collector.forwarding.retry import RetryPolicy


class ForwardSettings(BaseSettings):
    """Part of :class:`ctxledger_collector.ops.settings.Settings`."""

    model_config = SettingsConfigDict(env_prefix="CTXLEDGER_", extra="ignore")

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
