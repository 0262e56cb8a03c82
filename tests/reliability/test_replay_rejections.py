"""A span the database refuses while the spool replays an export it acknowledged during an
outage is a rejection like one refused at live ingest: listed at ``GET /api/v1/rejections``
(marked ``replayed``: its client was answered before the database saw it) and counted in
``ctxledger_ingest_rejected_spans_total``; the rest of the export is stored.

Real parts: a live collector with a spool on a SQLite file made read-only (``chattr +i``)
and on a PostgreSQL database closed to connections; the database refuses one tool call
through a trigger, as it would through any constraint."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.migrate import upgrade
from tests.collector import otlp_payloads as op
from tests.collector.conftest import fresh_postgres_database
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import _set_connections
from tests.collector.test_isolation import REFUSED_CALL, refuse_one_tool_call, stored_span_ids
from tests.reliability.kit import metric, wait_until
from tests.reliability.test_sqlite_faults import read_only

#: Starts the outage on the database at the URL; the context's end is the database back.
Outage = Callable[[str], contextlib.AbstractContextManager[None]]


@dataclass(frozen=True)
class Database:
    url: str
    outage: Outage
    outage_first: bool
    """Whether the collector starts during the outage: a SQLite connection opened before
    the file became immutable keeps writing to it."""


@contextlib.contextmanager
def _read_only_file(url: str) -> Iterator[None]:
    with read_only(Path(url.removeprefix("sqlite:///"))):
        yield


@contextlib.contextmanager
def _closed_to_connections(url: str) -> Iterator[None]:
    database = url.rsplit("/", 1)[1]
    _set_connections(database, allowed=False)
    try:
        yield
    finally:
        _set_connections(database, allowed=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield Database(f"sqlite:///{tmp_path / 'ctxledger.db'}", _read_only_file, True)
        return
    with fresh_postgres_database() as url:
        yield Database(url, _closed_to_connections, False)


def _refused_span() -> op.Span:
    return op.Span(op.stage_attributes(sc.STAGE_ORIGINAL, REFUSED_CALL, chars=9, tokens=2, items=1))


def _post(url: str, body: bytes) -> httpx.Response:
    headers = {"content-type": "application/x-protobuf"}
    return httpx.post(url + "/v1/traces", content=body, headers=headers, timeout=30)


def _rejections(url: str, trace_id: bytes) -> list[dict[str, Any]]:
    answer = httpx.get(url + "/api/v1/rejections", params={"trace_id": trace_id.hex()}, timeout=10)
    assert answer.status_code == 200, answer.text
    rows: list[dict[str, Any]] = answer.json()["rejections"]
    return rows


def _refused_count(url: str) -> float:
    return metric(url, "ctxledger_ingest_rejected_spans_total", reason="database_refused")


def test_a_span_refused_on_replay_is_listed_and_counted_like_one_refused_live(
    tmp_path: Path, database: Database
) -> None:
    url = database.url
    upgrade(url)
    engine = create_engine(url)
    settings = Settings(
        database_url=url,
        sweep_interval_s=3600,
        ingest_spool_dir=str(tmp_path / "spool"),
        ready_cache_s=0,
        ready_min_free_bytes=0,
    )
    trace_id = op.new_trace_id()
    refused = _refused_span()
    spans = [*op.journey_spans("call_kept", "req_kept"), refused]
    try:
        refuse_one_tool_call(engine)
        engine.dispose()  # no connection of the test's own outlives the outage
        with contextlib.ExitStack() as stack:
            outage = stack.enter_context(contextlib.ExitStack())
            if database.outage_first:
                outage.enter_context(database.outage(url))
            collector = stack.enter_context(LiveCollector(settings))
            if not database.outage_first:
                outage.enter_context(database.outage(url))
            answer = _post(collector.url, op.proto_body(trace_id, spans))
            assert answer.status_code == 200, answer.content  # kept in the spool
            assert metric(collector.url, "ctxledger_ingest_spool_requests") == 1
            assert _refused_count(collector.url) == 0
            outage.close()  # the database is back

            wait_until(
                lambda: metric(collector.url, "ctxledger_ingest_spool_requests") == 0,
                what="the replay",
            )
            assert metric(collector.url, "ctxledger_ingest_spool_replays_total", outcome="stored")
            every_span = {span.span_id.hex() for span in spans}
            assert stored_span_ids(engine, trace_id) == every_span - {refused.span_id.hex()}

            [row] = _rejections(collector.url, trace_id)
            assert row["span_id"] == refused.span_id.hex()
            assert row["reason"] == "database_refused"
            assert "refused by the test trigger" in row["detail"]
            assert row["replayed"] is True
            assert _refused_count(collector.url) == 1
            assert metric(collector.url, "ctxledger_ingest_spans_total", kind="rejected") == 1

            # The same refusal at live ingest: listed and counted alike, not marked.
            live_trace, live_refused = op.new_trace_id(), _refused_span()
            assert (
                _post(collector.url, op.proto_body(live_trace, [live_refused])).status_code == 200
            )
            [live_row] = _rejections(collector.url, live_trace)
            assert live_row["span_id"] == live_refused.span_id.hex()
            assert live_row["reason"] == "database_refused"
            assert live_row["replayed"] is False
            assert _refused_count(collector.url) == 2
    finally:
        engine.dispose()
