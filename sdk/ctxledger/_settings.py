"""SDK settings: constructor argument, then environment variable, then default."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_SPOOL_MAX_BYTES = 128 * 1024 * 1024
#: Values of ``spool_dir`` / ``CTXLEDGER_SPOOL_DIR`` that turn the spool off.
SPOOL_OFF = ("off", "none", "false", "no", "0")


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


def user_cache_dir(env: Mapping[str, str]) -> Path:
    """ctxledger's folder in the user's cache directory, as platformdirs would place it."""
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local") / "ctxledger" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "ctxledger"
    xdg = env.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "ctxledger"


def default_spool_dir(service_name: str | None, env: Mapping[str, str]) -> Path:
    """``<user cache>/ctxledger/spool/<service>``: one spool per service and user."""
    folder = re.sub(r"[^A-Za-z0-9._-]", "_", service_name or "")[:100].strip(".") or "default"
    return user_cache_dir(env) / "spool" / folder


def _spool_dir(
    argument: str | os.PathLike[str] | None, service_name: str | None, env: Mapping[str, str]
) -> str | None:
    raw = os.fspath(argument) if argument is not None else env.get("CTXLEDGER_SPOOL_DIR", "")
    if not raw.strip():
        return str(default_spool_dir(service_name, env))
    if raw.strip().lower() in SPOOL_OFF:
        return None
    return os.path.expanduser(raw.strip())


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
    spool_dir: str | None = None
    """Where batches the collector could not take wait (None: in memory only)."""
    spool_max_bytes: int = DEFAULT_SPOOL_MAX_BYTES
    export_batch: int = 1024
    export_delay_s: float = 0.5
    export_max_backoff_s: float = 30.0
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
        spool_dir: str | os.PathLike[str] | None = None,
        spool_max_bytes: int | None = None,
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
        resolved_service = service_name or env.get("OTEL_SERVICE_NAME") or None
        resolved_spool_max = spool_max_bytes or _env_int(
            "CTXLEDGER_SPOOL_MAX_BYTES", DEFAULT_SPOOL_MAX_BYTES, env
        )
        if resolved_spool_max <= 0:
            raise ValueError(f"spool_max_bytes must be positive, got {resolved_spool_max}")
        return cls(
            service_name=resolved_service,
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
            spool_dir=_spool_dir(spool_dir, resolved_service, env),
            spool_max_bytes=resolved_spool_max,
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
