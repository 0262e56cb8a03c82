"""The SDK configured to export into memory, for the tests that read its spans (a module
may define its own ``exporter`` instead)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.sdk.received_kit import memory_sdk


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    client = memory_sdk(exporter)
    yield exporter
    client.shutdown()
