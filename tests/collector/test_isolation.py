"""Span-by-span isolation: when the database refuses a batch, only the spans it refuses
are rejected, and an outage met while isolating still gets 503 (contract section 1).

Real parts only: a live collector on a SQLite file and on a PostgreSQL database. The
database refuses one tool call through a trigger (as it would through any constraint),
and the collector's own connection is killed in the middle of isolation: closed under
SQLAlchemy on SQLite, terminated by the server (``pg_terminate_backend``) on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import Engine, create_engine, event, text

from ctxledger import semconv as sc
from ctxledger.verdicts.duplicates import span_id_of
from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.conftest import POSTGRES_ADMIN
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import post, spans_counted

REFUSED_CALL = "call_refused"

_SQLITE_TRIGGER = f"""
CREATE TRIGGER refuse_call BEFORE INSERT ON measurements
WHEN NEW.tool_call_id = '{REFUSED_CALL}'
BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END
"""
_POSTGRES_TRIGGER = (
    f"""
CREATE FUNCTION refuse_call() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tool_call_id = '{REFUSED_CALL}' THEN
        RAISE EXCEPTION 'refused by the test trigger';
    END IF;
    RETURN NEW;
END $$
""",
    "CREATE TRIGGER refuse_call BEFORE INSERT ON measurements "
    "FOR EACH ROW EXECUTE FUNCTION refuse_call()",
)


def refuse_one_tool_call(database: Engine) -> None:
    with database.begin() as connection:
        if database.dialect.name == "sqlite":
            connection.exec_driver_sql(_SQLITE_TRIGGER)
        else:
            for statement in _POSTGRES_TRIGGER:
                connection.exec_driver_sql(statement)


def stop_refusing(database: Engine) -> None:
    with database.begin() as connection:
        connection.exec_driver_sql(
            "DROP TRIGGER refuse_call"
            + ("" if database.dialect.name == "sqlite" else " ON measurements")
        )


def kill_connection(connection: Any) -> None:
    """End the collector's database connection under it, as an outage would."""
    raw = connection.connection.dbapi_connection
    if connection.dialect.name == "sqlite":
        raw.close()
        return
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        # The timeout waits until the backend is gone.
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (raw.info.backend_pid,))


class ConnectionKiller:
    """Kills the collector's connection at the ``nth`` insert into ``measurements``
    (the first is the whole batch, the later ones isolate it span by span)."""

    def __init__(self, engine: Engine, nth: int) -> None:
        self.engine = engine
        self.nth = nth
        self.inserts = 0
        self.killed = threading.Event()

    def __enter__(self) -> ConnectionKiller:
        event.listen(self.engine, "before_cursor_execute", self._before_execute)
        return self

    def __exit__(self, *_: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._before_execute)

    def _before_execute(self, connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not statement.startswith("INSERT INTO measurements") or self.killed.is_set():
            return
        self.inserts += 1
        if self.inserts == self.nth:
            self.killed.set()
            kill_connection(connection)


@pytest.fixture
def database(database_url: str) -> Iterator[Engine]:
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


def stored_span_ids(database: Engine, trace_id: bytes) -> set[str]:
    run = "(SELECT id FROM runs WHERE trace_id = :t)"
    with database.connect() as connection:
        rows = connection.execute(
            text(
                f"SELECT span_number FROM measurements WHERE run_id = {run} "
                f"UNION SELECT span_number FROM manifests WHERE run_id = {run}"
            ),
            {"t": trace_id.hex()},
        )
        return {span_id_of(row[0]) for row in rows}


def test_an_outage_while_isolating_spans_gets_503_and_rejects_nothing(
    database_url: str, database: Engine
) -> None:
    settings = Settings(  # without a spool: the outage is answered 503
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=3600,
        retry_after_s=2,
        ingest_spool_dir="off",
    )
    with LiveCollector(settings) as collector:
        refuse_one_tool_call(database)
        trace_id = op.new_trace_id()
        refused = op.Span(
            op.stage_attributes(sc.STAGE_ORIGINAL, REFUSED_CALL, chars=9, tokens=2, items=1)
        )
        spans = [*op.journey_spans("call_kept", "req_kept"), refused]
        body = op.proto_body(trace_id, spans)
        engine = collector.app.state.ctxledger.engine

        # The batch is refused (insert 1); isolation stores the first span alone
        # (insert 2) and loses its connection on the second (insert 3).
        with ConnectionKiller(engine, nth=3) as killer:
            answer = post(collector, body)
        assert killer.killed.is_set()

        assert answer.status_code == 503, answer.content
        assert answer.headers["retry-after"] == "2"
        assert status_pb2.Status.FromString(answer.content).code == 14  # UNAVAILABLE
        assert spans_counted(collector)["rejected"] == 0

        # The exporter retries: every span the database accepts is stored, the refused
        # one alone is rejected, with the database's reason.
        answer = post(collector, body)
        assert answer.status_code == 200, answer.content
        partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 1
        assert refused.span_id.hex() in partial.error_message
        assert "refused by the test trigger" in partial.error_message
        every_span = {span.span_id.hex() for span in spans}
        assert stored_span_ids(database, trace_id) == every_span - {refused.span_id.hex()}

        stop_refusing(database)
        answer = post(collector, body)
        assert answer.status_code == 200, answer.content
        assert not ExportTraceServiceResponse.FromString(answer.content).HasField("partial_success")
        assert stored_span_ids(database, trace_id) == every_span
