"""One export of 40,000 or 100,000 spans through the stock OTLP/HTTP exporter to a real
`ctxledger serve`: past the request time limit the export is kept whole in the ingest
spool and answered 200, and every span of it is stored (span id sets), also with SIGTERM
in the middle and a new collector taking over; nothing is acknowledged and then dropped.
Two cases here; bench/large_export.py runs all eight (both dialects, both sizes, with and
without SIGTERM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.large_export_kit import run_large_export


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dialect", "size", "sigterm"),
    [("sqlite", "40k", False), ("postgresql", "100k", True)],
)
def test_a_large_export_is_stored_whole(
    tmp_path: Path, dialect: str, size: str, sigterm: bool
) -> None:
    export = run_large_export(tmp_path, dialect, size, sigterm)
    assert export.exporter_result == "SUCCESS", export.exporter_log[-2000:]
    assert len(export.sent) == 40_000
    missing = export.sent - export.stored
    assert not missing, f"{len(missing)} spans of the acknowledged export never stored"
    assert export.stored == export.sent
    assert "Exception in ASGI application" not in export.collector_logs
    if sigterm:  # the first collector answered 503: the exporter sent it again
        assert "Service Unavailable" in export.exporter_log
