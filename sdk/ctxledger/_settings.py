"""SDK settings: constructor argument, then environment variable, then default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"


def _env_bool(name: str, default: bool, env: Mapping[str, str]) -> bool:
    value = env.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _env_int(name: str, default: int, env: Mapping[str, str]) -> int:
    value = env.get(name)
    if value is None or not value.strip():
        return default
    try:
        return int(value)
    except ValueError as error:
        raise ValueError(f"{name} must be an integer, got {value!r}") from error


@dataclass(frozen=True)
class Settings:
    """Resolved SDK settings. Build with :meth:`resolve`."""

    service_name: str | None = None
    endpoint: str | None = None
    api_key: str | None = None
    export: bool = True
    ledger: str | None = None
    capture_content: bool = False
    max_queue: int = 65_536
    export_batch: int = 1024
    export_delay_s: float = 0.5
    max_exact_token_chars: int = 1_048_576
    default_encoding: str = "cl100k_base"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls,
        *,
        service_name: str | None = None,
        endpoint: str | None = None,
        api_key: str | None = None,
        export: bool | None = None,
        ledger: str | None = None,
        capture_content: bool | None = None,
        max_queue: int | None = None,
        max_exact_token_chars: int | None = None,
        default_encoding: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Settings:
        env = os.environ if env is None else env
        # The OTLP exporter reads OTEL_EXPORTER_OTLP_* itself; only our own names here.
        resolved_endpoint = endpoint or env.get("CTXLEDGER_ENDPOINT") or None
        if resolved_endpoint is None and not (
            env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        ):
            resolved_endpoint = DEFAULT_ENDPOINT
        sdk_disabled = _env_bool("OTEL_SDK_DISABLED", False, env)
        return cls(
            service_name=service_name or env.get("OTEL_SERVICE_NAME") or None,
            endpoint=resolved_endpoint,
            api_key=api_key or env.get("CTXLEDGER_API_KEY") or None,
            export=export
            if export is not None
            else _env_bool("CTXLEDGER_EXPORT", True, env) and not sdk_disabled,
            ledger=ledger if ledger is not None else (env.get("CTXLEDGER_LEDGER") or None),
            capture_content=capture_content
            if capture_content is not None
            else _env_bool("CTXLEDGER_CAPTURE_CONTENT", False, env),
            max_queue=max_queue or _env_int("CTXLEDGER_MAX_QUEUE", 65_536, env),
            max_exact_token_chars=max_exact_token_chars
            or _env_int("CTXLEDGER_MAX_EXACT_TOKEN_CHARS", 1_048_576, env),
            default_encoding=default_encoding or env.get("CTXLEDGER_TOKENIZER") or "cl100k_base",
        )

    @property
    def traces_url(self) -> str | None:
        """The OTLP/HTTP traces URL, or None to let the exporter read OTEL_* variables."""
        if self.endpoint is None:
            return None
        base = self.endpoint.rstrip("/")
        return base if base.endswith("/v1/traces") else f"{base}/v1/traces"
