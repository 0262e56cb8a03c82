"""The floor: what decoding the same OTLP requests and inserting one row per span costs
with the raw driver, no collector, no judging.

Decode: ``ExportTraceServiceRequest`` parse (protobuf, whichever backend is installed)
and one attribute dict per span. Insert, one transaction per request as the collector
commits one per export: SQLite ``executemany`` into a WAL database (the collector's own
``synchronous``, FULL by default: each commit on disk before the next) with two
indexes, or psycopg ``COPY`` into PostgreSQL with the same two indexes. One thread, timed
from the first parse to the last commit.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan

from benchkit.databases import fresh_postgres_raw
from ctxledger import semconv as sc

Row = tuple[str, str, str, int, str | None, str | None, str | None, str]

_COLUMNS = "trace_id, span_id, name, end_ns, tool_call_id, request_id, stage, attributes"
_SQLITE_SCHEMA = (
    "CREATE TABLE spans (trace_id TEXT NOT NULL, span_id TEXT NOT NULL, name TEXT NOT NULL,"
    " end_ns INTEGER NOT NULL, tool_call_id TEXT, request_id TEXT, stage TEXT,"
    " attributes TEXT NOT NULL)",
    "CREATE INDEX spans_journey ON spans (trace_id, tool_call_id, request_id, stage)",
    "CREATE INDEX spans_request ON spans (trace_id, request_id)",
)
_PG_SCHEMA = tuple(
    s.replace("INTEGER", "BIGINT").replace("attributes TEXT", "attributes JSONB")
    for s in _SQLITE_SCHEMA
)


def request_bodies(batches: Sequence[Sequence[ReadableSpan]]) -> list[bytes]:
    """The bodies the stock exporter sends for these batches (before compression)."""
    return [encode_spans(batch).SerializePartialToString() for batch in batches]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> Iterator[Row]:
    request = ExportTraceServiceRequest.FromString(body)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attrs = {kv.key: _value(kv.value) for kv in span.attributes}
                yield (
                    span.trace_id.hex(),
                    span.span_id.hex(),
                    span.name,
                    span.end_time_unix_nano,
                    attrs.get(sc.TOOL_CALL_ID),
                    attrs.get(sc.REQUEST_ID),
                    attrs.get(sc.STAGE),
                    json.dumps(attrs, separators=(",", ":")),
                )


def sqlite_floor(bodies: Sequence[bytes], workdir: Path, synchronous: str = "FULL") -> float:
    """Seconds to decode every body and insert its rows, one transaction per body."""
    path = workdir / "floor.db"
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        for statement in _SQLITE_SCHEMA:
            connection.execute(statement)
        insert = f"INSERT INTO spans ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        started = time.perf_counter()
        for body in bodies:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(insert, decode(body))
            connection.execute("COMMIT")
        return time.perf_counter() - started
    finally:
        connection.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def postgres_floor(bodies: Sequence[bytes], libpq_url: str) -> float:
    """Seconds to decode every body and ``COPY`` its rows, one transaction per body."""
    import psycopg

    with psycopg.connect(libpq_url) as connection:
        for statement in _PG_SCHEMA:
            connection.execute(statement)
        connection.commit()
        started = time.perf_counter()
        for body in bodies:
            with (
                connection.cursor() as cursor,
                cursor.copy(f"COPY spans ({_COLUMNS}) FROM STDIN") as copy,
            ):
                for row in decode(body):
                    copy.write_row(row)
            connection.commit()
        return time.perf_counter() - started


def floor_seconds(
    database: str,
    bodies: Sequence[bytes],
    workdir: Path,
    pg_admin_url: str,
    sqlite_synchronous: str = "FULL",
) -> float:
    """The floor's seconds for ``bodies`` on ``database`` (a fresh PostgreSQL database,
    dropped afterwards); on SQLite with the collector's own durability (``synchronous``),
    so both sides pay the same syncs."""
    if database == "sqlite":
        return sqlite_floor(bodies, workdir, sqlite_synchronous)
    with fresh_postgres_raw(pg_admin_url) as libpq_url:
        return postgres_floor(bodies, libpq_url)
