"""One large export through the stock OTLP/HTTP exporter, in a process of its own, to a
real `ctxledger serve` (SQLite or PostgreSQL), optionally with SIGTERM in the middle and
a second collector taking over on the same port and database: what the exporter said,
the span ids it sent and those stored. For tests/reliability/test_large_export.py and
bench/large_export.py."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.collector.conftest import fresh_postgres_database
from tests.e2e.helpers import subprocess_env
from tests.reliability.kit import ServeProcess, stored_span_ids, wait_until

#: (journeys of 5 spans, 10 a trace with its root span; plain spans): 40,000 ctxledger
#: spans, and 100,000 spans in all (the collector's limit a request): 40,000 ctxledger
#: spans beside an agent's other spans, as the stock exporter caps one export at 64 MiB
#: (100,000 ctxledger spans are 77 MiB).
SIZES = {"40k": (8_000, 0), "100k": (8_000, 100_000 - 8_000 * 5 - 800)}


@dataclass(frozen=True)
class LargeExport:
    exporter_result: str
    """``SUCCESS`` or ``FAILURE``, as the stock exporter returned."""
    sent: frozenset[str]
    stored: frozenset[str]
    seconds_to_stored: float
    """From the export's start until every span was stored (or the wait gave up)."""
    exporter_log: str
    collector_logs: str


def _stored_count(database_url: str) -> int:
    try:
        return len(stored_span_ids(database_url))
    except Exception:  # the tables are not there yet
        return 0


def run_large_export(tmp_path: Path, dialect: str, size: str, sigterm: bool) -> LargeExport:
    journeys, plain = SIZES[size]
    with contextlib.ExitStack() as stack:
        if dialect == "postgresql":
            database_url: str = stack.enter_context(fresh_postgres_database())
        else:
            database_url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
        env = {
            "CTXLEDGER_DATABASE_URL": database_url,
            "CTXLEDGER_AUTO_MIGRATE": "true",
            "CTXLEDGER_INGEST_SPOOL_DIR": str(tmp_path / "spool"),
            "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
            # Far shorter than the export takes: the path a 30 s limit takes on a big one.
            "CTXLEDGER_INGEST_REQUEST_TIMEOUT_S": "2",
            "CTXLEDGER_RETRY_AFTER_S": "2",
        }
        first = ServeProcess(env, tmp_path / "first.log").start("--shutdown-timeout", "1")
        second = ServeProcess(env, tmp_path / "second.log", port=first.port)
        ids_file = tmp_path / "ids.txt"
        child = ["tests.reliability.export_child", first.url, str(journeys), str(ids_file)]
        started = time.monotonic()
        with (tmp_path / "exporter.log").open("wb") as exporter_log:
            exporter = subprocess.Popen(
                [sys.executable, "-m", *child, str(plain)],
                # gzip, as a large export goes: its body is over the 16 MiB limit plain.
                env=subprocess_env(OTEL_EXPORTER_OTLP_COMPRESSION="gzip"),
                stdout=subprocess.PIPE,
                stderr=exporter_log,
            )
        try:
            if sigterm:
                wait_until(lambda: _stored_count(database_url) > 0, what="the first chunk")
                first.signal(signal.SIGTERM)
                first.wait(timeout_s=60)
                second.start()
            output, _ = exporter.communicate(timeout=240)
            sent = frozenset(ids_file.read_text().split())
            with contextlib.suppress(AssertionError):  # the caller compares the sets
                wait_until(lambda: sent <= stored_span_ids(database_url), 120, "every span")
            seconds = time.monotonic() - started
            stored = frozenset(stored_span_ids(database_url))
        finally:
            exporter.kill()
            first.stop()
            second.stop()
        logs = "\n".join(
            (tmp_path / name).read_text()
            for name in ("first.log", "second.log")
            if (tmp_path / name).exists()
        )
        return LargeExport(
            output.decode().strip(),
            sent,
            stored,
            seconds,
            (tmp_path / "exporter.log").read_text(),
            logs,
        )
