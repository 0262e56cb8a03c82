"""SIGTERM while a large export is being stored: the collector answers it 503 with
Retry-After (or finishes it), never 500, so that the stock exporter sends it again to
the collector that takes over on the same port and database (SQLite and PostgreSQL),
and every span of it is stored."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from tests.collector.conftest import fresh_postgres_database
from tests.e2e.helpers import subprocess_env
from tests.reliability.kit import ServeProcess, stored_span_ids, wait_until

#: 3,277 journeys of 5 spans: one export of 16,385 ctxledger spans (and the root span).
_JOURNEYS = 3_277


def _stored_count(database_url: str) -> int:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return sum(
                connection.exec_driver_sql(f"SELECT COUNT(*) FROM {table}").scalar_one()
                for table in ("measurements", "manifests")
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_an_export_in_flight_at_sigterm_is_retried_to_the_next_collector_and_stored(
    tmp_path: Path, dialect: str
) -> None:
    with contextlib.ExitStack() as stack:
        if dialect == "postgresql":
            database_url = stack.enter_context(fresh_postgres_database())
        else:
            database_url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
        _sigterm_mid_export(tmp_path, database_url)


def _sigterm_mid_export(tmp_path: Path, database_url: str) -> None:
    env = {
        "CTXLEDGER_DATABASE_URL": database_url,
        "CTXLEDGER_AUTO_MIGRATE": "true",
        "CTXLEDGER_INGEST_SPOOL_DIR": "off",
        "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
        # The retried export is stored whole, however slow the machine: no span is
        # rejected past the request time limit.
        "CTXLEDGER_INGEST_REQUEST_TIMEOUT_S": "600",
        "CTXLEDGER_RETRY_AFTER_S": "2",
    }
    first = ServeProcess(env, tmp_path / "first.log").start("--shutdown-timeout", "1")
    second = ServeProcess(env, tmp_path / "second.log", port=first.port)
    ids_file = tmp_path / "ids.txt"
    child = ["tests.reliability.export_child", first.url, str(_JOURNEYS), str(ids_file)]
    with (tmp_path / "exporter.log").open("wb") as exporter_log:
        exporter = subprocess.Popen(
            [sys.executable, "-m", *child],
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=exporter_log,
        )
    try:
        wait_until(lambda: _stored_count(database_url) > 0, what="the export's first chunk")
        first.signal(signal.SIGTERM)
        first.wait(timeout_s=30)
        second.start()
        output, _ = exporter.communicate(timeout=90)
    finally:
        exporter.kill()
        first.stop()
        second.stop()
    sent = set(ids_file.read_text().split())
    assert len(sent) == _JOURNEYS * 5
    exporter_said = (tmp_path / "exporter.log").read_text()
    assert output.decode().strip() == "SUCCESS", exporter_said[-2000:]
    missing = sent - stored_span_ids(database_url)
    assert not missing, f"{len(missing)} spans of the export never stored"
    first_log = (tmp_path / "first.log").read_text()
    assert "Exception in ASGI application" not in first_log, first_log[-3000:]
    assert "Service Unavailable" in exporter_said  # the first collector answered 503
