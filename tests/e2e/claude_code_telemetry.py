"""How the tests run Claude Code against the provider stand-in with its own telemetry on:
the environment of ``claude -p`` (also what docs/zero-sdk.md tells a user to set)."""

from __future__ import annotations

import os
from pathlib import Path


def telemetry_env(otlp_endpoint: str, provider_url: str, home: Path) -> dict[str, str]:
    """Claude Code talking to the stand-in at ``provider_url`` with any key, no other
    traffic, exporting its logs and traces over OTLP/HTTP protobuf to ``otlp_endpoint``
    with tool details, tool content and raw request bodies on."""
    return {
        **os.environ,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": provider_url,
        "ANTHROPIC_API_KEY": "sk-stand-in",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint,
        "OTEL_LOG_TOOL_DETAILS": "1",
        "OTEL_LOG_TOOL_CONTENT": "1",
        "OTEL_LOG_RAW_API_BODIES": "1",
    }
