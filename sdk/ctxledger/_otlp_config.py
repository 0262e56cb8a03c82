"""Where and how ctxledger's own pipeline sends OTLP/HTTP: its settings first, then the
standard ``OTEL_EXPORTER_OTLP_TRACES_*`` / ``OTEL_EXPORTER_OTLP_*`` variables, then the
OpenTelemetry defaults, as the stock OTLP/HTTP exporter resolves them."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from opentelemetry.util.re import parse_env_headers

from ctxledger import __about__
from ctxledger._settings import Settings

logger = logging.getLogger("ctxledger")

DEFAULT_TRACES_URL = "http://localhost:4318/v1/traces"
DEFAULT_TIMEOUT_S = 10.0
COMPRESSIONS = ("none", "gzip", "deflate")


def _otlp_env(env: Mapping[str, str], name: str) -> str | None:
    """``OTEL_EXPORTER_OTLP_TRACES_<name>``, else ``OTEL_EXPORTER_OTLP_<name>``."""
    signal = env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
    return signal or env.get(f"OTEL_EXPORTER_OTLP_{name}") or None


def _traces_url(settings: Settings, env: Mapping[str, str]) -> str:
    if settings.traces_url is not None:
        return settings.traces_url
    if signal_url := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return signal_url  # the signal URL is used as given
    if base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return f"{base.rstrip('/')}/v1/traces"
    return DEFAULT_TRACES_URL


def _timeout_s(env: Mapping[str, str]) -> float:
    raw = _otlp_env(env, "TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        logger.warning("ctxledger: invalid OTLP timeout %r; using %g s", raw, DEFAULT_TIMEOUT_S)
        return DEFAULT_TIMEOUT_S
    return value


def _compression(env: Mapping[str, str]) -> str:
    value = (_otlp_env(env, "COMPRESSION") or "none").strip().lower()
    if value not in COMPRESSIONS:
        logger.warning("ctxledger: unsupported OTLP compression %r; sending uncompressed", value)
        return "none"
    return value


def _headers(settings: Settings, env: Mapping[str, str]) -> dict[str, str]:
    headers = {
        "content-type": "application/x-protobuf",
        "user-agent": f"ctxledger/{__about__.__version__}",
    }
    env_headers = _otlp_env(env, "HEADERS")
    if env_headers:
        parsed = parse_env_headers(env_headers, liberal=True)
        headers.update({k.lower(): v for k, v in parsed.items()})
    headers.update({k.lower(): v for k, v in settings.headers.items()})
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    return headers


@dataclass(frozen=True)
class SenderConfig:
    """Everything one export attempt needs besides the body."""

    url: str = DEFAULT_TRACES_URL
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    compression: str = "none"
    verify: bool | str = True
    """True, or the CA bundle that signs the collector's certificate."""
    client_cert: str | tuple[str, str] | None = None

    @classmethod
    def resolve(cls, settings: Settings, env: Mapping[str, str] | None = None) -> SenderConfig:
        env = os.environ if env is None else env
        client_cert = _otlp_env(env, "CLIENT_CERTIFICATE")
        client_key = _otlp_env(env, "CLIENT_KEY")
        return cls(
            url=_traces_url(settings, env),
            headers=_headers(settings, env),
            timeout_s=_timeout_s(env),
            compression=_compression(env),
            verify=_otlp_env(env, "CERTIFICATE") or True,
            client_cert=(client_cert, client_key) if client_cert and client_key else client_cert,
        )
