"""SQLite faults: a read-only database file and a full disk, met by a running collector
and the stock OTLP exporter. Read-only is made with the immutable attribute (``chattr
+i``: root ignores file modes) and a full disk with a small tmpfs; both are skipped
where the machine does not allow them."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.migrate import upgrade
from tests.collector.live_collector import LiveCollector
from tests.reliability.kit import make_batch, metric, stored_span_ids, wait_until


def _settings(database: Path, **extra: object) -> Settings:
    return Settings(
        database_url=f"sqlite:///{database}",
        auto_migrate=True,
        sweep_interval_s=3600,
        retry_after_s=1,
        ready_cache_s=0,
        ready_min_free_bytes=0,
        **extra,  # type: ignore[arg-type]
    )


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available: cannot make a file read-only for root")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make {path} immutable: {made.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def _writable(path: Path) -> None:
    subprocess.run(["chattr", "-i", str(path)], check=True)


def _post(url: str, body: bytes) -> httpx.Response:
    headers = {"content-type": "application/x-protobuf"}
    return httpx.post(url + "/v1/traces", content=body, headers=headers, timeout=30)


def test_read_only_file_answers_503_then_the_next_export_is_stored_at_once(
    tmp_path: Path,
) -> None:
    database = tmp_path / "ctxledger.db"
    upgrade(f"sqlite:///{database}")
    refused, stored = make_batch(5), make_batch(5)
    with read_only(database), LiveCollector(_settings(database, ingest_spool_dir="off")) as c:
        answer = _post(c.url, encode_spans(refused.spans).SerializeToString())
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        ready = httpx.get(c.url + "/readyz", timeout=10)
        assert ready.status_code == 503
        assert "cannot take writes" in ready.json()["reason"]

        _writable(database)
        exporter = OTLPSpanExporter(endpoint=c.url + "/v1/traces", timeout=30)
        assert exporter.export(stored.spans) == SpanExportResult.SUCCESS
        assert httpx.get(c.url + "/readyz", timeout=10).status_code == 200
    # The refused batch was answered 503 (the client keeps it); the next one is stored.
    assert stored_span_ids(f"sqlite:///{database}") == stored.ids


def test_read_only_file_with_the_spool_acknowledges_and_replays_everything(
    tmp_path: Path,
) -> None:
    database = tmp_path / "ctxledger.db"
    upgrade(f"sqlite:///{database}")
    batches = [make_batch(10) for _ in range(6)]
    settings = _settings(database, ingest_spool_dir=str(tmp_path / "spool"))
    with read_only(database), LiveCollector(settings) as c:
        exporter = OTLPSpanExporter(endpoint=c.url + "/v1/traces", timeout=30)
        for batch in batches:
            assert exporter.export(batch.spans) == SpanExportResult.SUCCESS
        ready = httpx.get(c.url + "/readyz", timeout=10)
        assert ready.status_code == 503
        assert ready.json()["spool"]["requests"] == len(batches)
        assert metric(c.url, "ctxledger_ingest_spool_requests") == len(batches)
        # Queries of the read-only file still answer.
        assert httpx.get(c.url + "/api/v1/reports", timeout=10).status_code == 200

        _writable(database)
        wait_until(lambda: metric(c.url, "ctxledger_ingest_spool_requests") == 0, what="replay")
        assert metric(c.url, "ctxledger_ingest_spool_replays_total", outcome="stored") == 6
        assert httpx.get(c.url + "/readyz", timeout=10).status_code == 200
    sent = set().union(*(b.ids for b in batches))
    assert stored_span_ids(f"sqlite:///{database}") == sent


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder: Path) -> Path:
    """Fill the file system under ``folder`` to the last byte."""
    filler = folder / "filler"
    with filler.open("wb") as file, contextlib.suppress(OSError):
        while True:
            file.write(b"\0" * 65536)
            file.flush()
    with contextlib.suppress(OSError), filler.open("ab") as file:
        while True:
            file.write(b"\0")
            file.flush()
    return filler


def test_disk_full_spools_and_replays_once_space_is_freed(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", "32m") as disk:
        database = disk / "ctxledger.db"
        upgrade(f"sqlite:///{database}")
        settings = _settings(database, ingest_spool_dir=str(tmp_path / "spool"))
        settings = settings.model_copy(update={"ready_min_free_bytes": 1024 * 1024})
        with LiveCollector(settings) as c:
            exporter = OTLPSpanExporter(endpoint=c.url + "/v1/traces", timeout=30)
            first = make_batch(10)
            assert exporter.export(first.spans) == SpanExportResult.SUCCESS
            filler = _fill(disk)
            ready = httpx.get(c.url + "/readyz", timeout=10)
            assert ready.status_code == 503
            assert "disk nearly full" in ready.json()["reason"]
            batches = [make_batch(10) for _ in range(5)]
            for batch in batches:
                assert exporter.export(batch.spans) == SpanExportResult.SUCCESS
            assert metric(c.url, "ctxledger_ingest_spooled_total", outcome="kept") >= 1

            filler.unlink()
            wait_until(lambda: metric(c.url, "ctxledger_ingest_spool_requests") == 0, what="replay")
            assert httpx.get(c.url + "/readyz", timeout=10).status_code == 200
        sent = first.ids.union(*(b.ids for b in batches))
        assert stored_span_ids(f"sqlite:///{database}") == sent
