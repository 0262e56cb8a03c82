"""Helpers of the export pipeline's tests: a client with chosen settings, a record of every
span the SDK ended (real OpenTelemetry parts), and the span ids a spool folder holds."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ctxledger._client import Client, install
from ctxledger._settings import Settings
from ctxledger._spool import CLAIM, SUFFIX


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (until a test starts a receiver on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def install_client(
    endpoint: str,
    spool: Path | None,
    client_options: dict[str, Any] | None = None,
    **overrides: Any,
) -> tuple[Client, InMemorySpanExporter]:
    """A process-wide client exporting to ``endpoint`` with short retry waits, and a record
    of every span it ends. ``spool=None`` turns the spool off; ``overrides`` are settings,
    ``client_options`` the client's other arguments (``must_keep=``, …)."""
    settings = replace(
        Settings.resolve(service_name="pipeline-agent", endpoint=endpoint),
        spool_dir=None if spool is None else str(spool),
        export_max_backoff_s=0.2,
        **overrides,
    )
    client = install(Client(settings, **(client_options or {})))
    assert client.owned_provider is not None
    recorded = InMemorySpanExporter()
    client.owned_provider.add_span_processor(SimpleSpanProcessor(recorded))
    return client, recorded


def span_id(span: ReadableSpan) -> str:
    return format(span.get_span_context().span_id, "016x")


def recorded_ids(recorded: InMemorySpanExporter) -> list[str]:
    """Span ids of every span the client ended, in the order they ended."""
    return [span_id(s) for s in recorded.get_finished_spans()]


def spool_files(folder: Path) -> list[Path]:
    """The batches waiting under a spool folder (claimed ones too; every destination's
    folder in it), oldest first."""
    if not folder.exists():
        return []
    found = [p for p in folder.rglob("*") if p.name.endswith(SUFFIX) or CLAIM in p.name]
    return sorted(found, key=lambda p: p.name)


def spooled_spans(folder: Path) -> list[tuple[str, str]]:
    """(span id, span name) of the batches waiting in a spool folder, oldest first."""
    found: list[tuple[str, str]] = []
    for path in spool_files(folder):
        request = ExportTraceServiceRequest.FromString(path.read_bytes())
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                found.extend((span.span_id.hex(), span.name) for span in scope_spans.spans)
    return found


def spooled_ids(folder: Path) -> list[str]:
    """Span ids of the batches waiting in a spool folder, oldest first."""
    return [span_id for span_id, _ in spooled_spans(folder)]
