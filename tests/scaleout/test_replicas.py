"""Three ``ctxledger serve`` replicas on one PostgreSQL database behind HAProxy (the
commands of ``docker-compose.yml`` and ``deploy/haproxy.cfg``, run as processes), under
a sustained load from the SDK and the stock OTLP exporter. Mid-load one replica is
killed with SIGKILL and started again; then every replica is restarted one by one
(SIGTERM, start, ready), as a rolling upgrade does.

Afterwards every span the agents ended was exported (the exporter gave up on none),
every contract span is stored (its span id is in the database) or was rejected in an
answer, no journey is reported twice, no alert event exists twice, and the reports,
aggregates and alert events equal those of a single collector that received the same
spans in one request.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import ReadableSpan
from sqlalchemy import Engine, text

from ctxledger import semconv as sc
from ctxledger.verdicts.duplicates import span_number
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from tests.collector.conftest import fresh_postgres_database
from tests.collector.journey_counting import assert_counters_match_reports
from tests.collector.live_collector import LiveCollector
from tests.collector.test_queries import CONTEXT_WINDOW, MODEL, seed_run_a, seed_run_b, seed_run_c
from tests.collector.test_two_collectors import seed_run_d
from tests.scaleout.load import AgentLoad
from tests.scaleout.topology import Replica, migrate, replicas_behind_haproxy

#: No sweeps and no notifications while the test runs: what is compared is ingest's work.
SETTINGS = {"CTXLEDGER_SWEEP_INTERVAL_S": "3600", "CTXLEDGER_ALERT_SETTLE_S": "3600"}


def _strip(value: Any) -> Any:
    """An answer without what differs between collectors: judging time and links."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("judged_at", "links")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _all_reports(http: httpx.Client) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        page = http.get("/api/v1/reports", params=params).json()
        found += page["reports"]
        if not page["next_cursor"]:
            return found
        params["after"] = page["next_cursor"]


def answers_of(url: str) -> dict[str, Any]:
    """Every report and the aggregates, as the query API answers them."""
    with httpx.Client(base_url=url, timeout=60) as http:
        reports = _all_reports(http)
        keys = Counter((r["trace_id"], r["tool_call_id"], r["request_id"]) for r in reports)
        assert [k for k, n in keys.items() if n > 1] == [], "a journey reported twice"
        answer = {
            "reports": sorted(
                reports, key=lambda r: (r["trace_id"], r["tool_call_id"], r["request_id"] or "")
            ),
            "timeline": http.get("/api/v1/stats/timeline").json(),
            "by tool": http.get("/api/v1/stats/breakdown", params={"by": "tool"}).json(),
            "by agent": http.get("/api/v1/stats/breakdown", params={"by": "agent"}).json(),
            "runs": http.get("/api/v1/runs", params={"limit": 1}).json()["total"],
        }
    stripped: dict[str, Any] = _strip(answer)
    return stripped


def alert_events(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT rule, trace_id, tool_call_id, request_key, verdict FROM alert_events "
                "ORDER BY rule, trace_id, tool_call_id, request_key"
            )
        )
        return [tuple(row) for row in rows]


def stored_span_numbers(engine: Engine) -> list[int]:
    with engine.connect() as connection:
        measured = connection.execute(text("SELECT span_number FROM measurements")).scalars()
        manifests = connection.execute(text("SELECT span_number FROM manifests")).scalars()
        return [*measured, *manifests]


def contract_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """The spans the collector stores one row each for: stages and request manifests."""
    return [
        s
        for s in spans
        if s.attributes and (sc.STAGE in s.attributes or sc.REQUEST_TOOL_CALL_IDS in s.attributes)
    ]


def _wait_for_exports(load: AgentLoad, more_than: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while load.exporter.exported <= more_than:
        assert load.error is None, load.error
        assert time.monotonic() < deadline, "the load stopped moving"
        time.sleep(0.05)


def _restart(replica: Replica) -> None:
    replica.start()
    replica.wait_ready()
    time.sleep(1.2)  # HAProxy's next health check (inter 1s, rise 1) takes it back


@pytest.mark.timeout(600)  # ~60 s on an idle 2-core machine; minutes when it is shared
def test_replicas_lose_nothing_across_a_kill_and_a_rolling_restart(tmp_path: Path) -> None:
    with fresh_postgres_database("ctxledger_test_scaleout") as url:
        assert "is at revision" in migrate(url)  # once, before any replica starts
        with replicas_behind_haproxy(url, 3, tmp_path, **SETTINGS) as (proxy, replicas):
            load = AgentLoad(
                proxy.url,
                [seed_run_a, seed_run_b, seed_run_c, seed_run_d],
                context_windows={MODEL: CONTEXT_WINDOW},
                pause_s=0.05,  # leaves a 2-core machine room to restart replicas
            )
            load.start()
            try:
                _wait_for_exports(load, 100)
                victim = replicas[1]
                victim.kill()  # mid-load, mid-transaction perhaps
                _wait_for_exports(load, load.exporter.exported + 60)
                _restart(victim)
                for replica in replicas:  # a rolling restart, as an upgrade does
                    _wait_for_exports(load, load.exporter.exported + 40)
                    assert replica.stop() in (0, -15)
                    _restart(replica)
                _wait_for_exports(load, load.exporter.exported + 60)
            finally:
                load.stop()
            assert [r.starts for r in replicas] == [2, 3, 2]
            spent = {r.name: r.log.read_text() for r in replicas}
            seen_by_replicas = answers_of(proxy.url)
            engine = make_engine(url)
            try:
                stored = stored_span_numbers(engine)
                replica_alerts = alert_events(engine)
                assert_counters_match_reports(engine)
            finally:
                engine.dispose()

    spans = load.spans
    assert load.exporter.failed == [], "the exporter gave up on spans"
    assert load.exporter.exported == len(spans)
    assert load.answers.rejected_spans == 0, load.answers.rejection_messages
    sent = {span_number(format(s.context.span_id, "016x")) for s in contract_spans(spans)}
    assert len(stored) == len(set(stored)), "a span stored twice"
    assert set(stored) == sent, (len(sent - set(stored)), len(set(stored) - sent), spent)
    assert load.runs_done >= 8

    reference_db = tmp_path / "reference.db"
    reference = Settings(
        database_url=f"sqlite:///{reference_db}",
        auto_migrate=True,
        sweep_interval_s=3600.0,
        alert_settle_s=3600.0,
    )
    with LiveCollector(reference) as single, httpx.Client(timeout=120) as http:
        answer = http.post(
            f"{single.url}/v1/traces",
            content=encode_spans(spans).SerializeToString(),
            headers={"content-type": "application/x-protobuf"},
        )
        assert answer.status_code == 200, answer.text
        parsed = ExportTraceServiceResponse()
        parsed.ParseFromString(answer.content)
        assert parsed.partial_success.rejected_spans == 0
        expected = answers_of(single.url)
    reference_engine = make_engine(reference.database_url)
    try:
        expected_alerts = alert_events(reference_engine)
    finally:
        reference_engine.dispose()

    verdicts = Counter(r["verdict"] for r in expected["reports"])
    assert {"silent", "declared", "orphaned", "dropped", "intact"} <= set(verdicts)
    assert expected["runs"] == load.runs_done
    assert seen_by_replicas == expected
    assert len(replica_alerts) == len(set(replica_alerts)) and replica_alerts
    assert replica_alerts == expected_alerts
