"""``POST /v1/logs`` with the stock OpenTelemetry JS log SDK and its OTLP/HTTP exporters,
JSON and protobuf (npm, installed by the test into a cached ``node_modules``), into a real
collector: every record emitted is stored by its id, and the JSON exporter's record with
a lone surrogate is rejected alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import metric_samples

from .cached_installs import prepared_node_project, require_node
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "otel_js_logs"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_node()
    return prepared_node_project(PROJECT, tmp_path_factory.mktemp("otel-js-logs"))


def _emit(project: Path, url: str, protocol: str, count: int, bad_text: bool) -> list[str]:
    done = subprocess.run(
        ["node", "emit_logs.mjs", url, protocol, str(count), "bad-text" if bad_text else "ok"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.split()


@pytest.mark.parametrize("protocol", ["json", "proto"])
def test_the_stock_js_log_exporters_records_are_stored_by_id(
    project: Path, tmp_path: Path, protocol: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    with LiveCollector(Settings(database_url=url, auto_migrate=True)) as collector:
        emitted = _emit(project, collector.url, protocol, 6, bad_text=protocol == "json")
        samples = metric_samples(collector)
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = list(connection.execute(select(LOG_RECORDS)))
    engine.dispose()
    stored = {row.call_id for row in rows}
    assert len(emitted) == 6
    rejected = samples[("ctxledger_ingest_log_records_total", frozenset({("kind", "rejected")}))]
    if protocol == "json":
        # The lone surrogate's record alone is refused; the other five are kept.
        assert stored == set(emitted) - {emitted[1]}
        assert rejected == 1
    else:
        assert stored == set(emitted)
        assert rejected == 0
    assert {row.event_name for row in rows} == {"claude_code.tool_result"}
    assert all(row.service_name == "claude-code" for row in rows)
    sizes = sorted(row.numbers for row in rows)
    assert all('"tool_result_size_bytes"' in size for size in sizes)
