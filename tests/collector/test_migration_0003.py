"""Migration 0003 converts a database full of 0002 rows: the journeys the old collector
judged read the same through the query API afterwards, new spans join them, and the
downgrade converts them back. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage import migrate
from ctxledger_collector.storage.database import make_engine
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector

TRACE = "ab" * 16
CALL = "call_kb"
REQUEST = "req-00000001"
IDS = [f"kb-{i:03d}" for i in range(5)]


def _record(
    stage: str, order: int, request_id: str | None, items: int, at: float
) -> dict[str, Any]:
    """A v2 measurement record: every field of the rules' Measurement, as 0002 stored it."""
    return {
        "trace_id": TRACE,
        "tool_call_id": CALL,
        "stage": stage,
        "order": order,
        "chars": items * 100,
        "request_id": request_id,
        "tool_name": "search_kb",
        "agent_name": "kb-agent",
        "step": 1 if request_id is None else 2,
        "bytes": items * 150,
        "tokens": items * 30,
        "tokenizer": "cl100k_base",
        "tokens_estimated": False,
        "canonical_chars": None,
        "items": items,
        "item_ids": IDS[:items],
        "ids_complete": True,
        "fields": ["id", "text"],
        "fields_complete": True,
        "priority_items": None,
        "sha256": f"{items:02d}" * 32,
        "canonical_sha256": None,
        "json_valid": True,
        "declared": False,
        "strategy": None,
        "marker": False,
        "markers_found": [],
        "ref": None,
        "dropped_attributes": 0,
        "observed_at": at,
        "span_id": f"{order:016x}",
    }


def _fill_v2(url: str) -> None:
    engine = make_engine(url)
    json_value = "CAST(:{} AS JSON)" if engine.dialect.name == "postgresql" else ":{}"

    def insert(table: str, row: dict[str, Any]) -> None:
        values = [
            json_value.format(k) if k in ("record", "attributes", "detail") else f":{k}"
            for k in row
        ]
        sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(values)})"
        connection.execute(
            sa.text(sql),
            {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()},
        )

    with engine.begin() as connection:
        insert(
            "runs",
            dict(
                trace_id=TRACE,
                service_name="kb",
                agent_name="kb-agent",
                first_seen=100.0,
                last_seen=102.0,
            ),
        )
        for stage, order, request_id, items, at in (
            ("original", 10, None, 5, 100.0),
            ("sent", 40, REQUEST, 2, 101.0),
        ):
            record = _record(stage, order, request_id, items, at)
            attributes = {sc.STAGE: stage, sc.TOOL_CALL_ID: CALL, "custom.team": "search"}
            insert(
                "measurements",
                dict(
                    trace_id=TRACE,
                    tool_call_id=CALL,
                    request_key=request_id or "",
                    stage=stage,
                    stage_order=order,
                    tool_name="search_kb",
                    step=record["step"],
                    span_id=record["span_id"],
                    observed_at=at,
                    pick_key=f"{at:020.6f}|x",
                    dropped_attributes=0,
                    record=record,
                    attributes=attributes,
                ),
            )
        manifest = {
            "trace_id": TRACE,
            "request_id": REQUEST,
            "step": 2,
            "tool_call_ids": [CALL],
            "tool_calls": [CALL],
            "tokens": 900,
            "context_window": 128000,
            "model": "gpt-4o",
            "agent_name": "kb-agent",
            "sdk_dropped_spans": 0,
            "observed_at": 102.0,
            "span_id": "00000000000000ff",
        }
        insert(
            "manifests",
            dict(
                trace_id=TRACE,
                request_id=REQUEST,
                step=2,
                model="gpt-4o",
                tokens=900,
                context_window=128000,
                span_id="00000000000000ff",
                observed_at=102.0,
                pick_key="x",
                record=manifest,
                attributes={sc.TOKENIZER: "o200k_base"},
            ),
        )
        transition = {
            "from_stage": "original",
            "to_stage": "sent",
            "verdict": "silent",
            "lost_items": 3,
            "lost_item_ids": IDS[2:],
            "lost_fields": [],
            "lost_chars": 300,
            "lost_tokens": 90,
            "lost_priority_items": 0,
            "reasons": ["items 5 -> 2", "3 item ids missing"],
        }
        insert(
            "reports",
            dict(
                trace_id=TRACE,
                tool_call_id=CALL,
                request_key=REQUEST,
                verdict="silent",
                tool_name="search_kb",
                agent_name="kb-agent",
                step=2,
                settled=True,
                lost_items=3,
                lost_chars=300,
                lost_tokens=90,
                last_observed_at=102.0,
                judged_at=103.0,
                detail={
                    "request_id": REQUEST,
                    "lost_item_ids": IDS[2:],
                    "lost_fields": [],
                    "lost_priority_items": 0,
                    "notes": [],
                    "stages": [],
                    "transitions": [transition],
                },
            ),
        )
    engine.dispose()


def test_0002_rows_read_the_same_after_the_upgrade_and_survive_the_downgrade(
    database_url: str,
) -> None:
    migrate.upgrade(database_url, "0002_alerts")
    _fill_v2(database_url)
    migrate.upgrade(database_url)

    settings = Settings(database_url=database_url, auto_migrate=False, sweep_interval_s=3600.0)
    with LiveCollector(settings) as collector, collector.client() as http:
        (report,) = http.get("/api/v1/reports", params={"trace_id": TRACE}).json()["reports"]
        assert (report["verdict"], report["lost_items"], report["lost_item_ids"]) == (
            "silent",
            3,
            IDS[2:],
        )
        assert [s["stage"] for s in report["stages"]] == ["original", "sent"]
        assert [s["items"] for s in report["stages"]] == [5, 2]
        assert report["transitions"][0]["reasons"] == ["items 5 -> 2", "3 item ids missing"]
        run = http.get(f"/api/v1/runs/{TRACE}").json()
        manifest = run["steps"][0]["requests"][0]["manifest"]
        assert (manifest["tokenizer"], manifest["tool_call_ids"]) == ("o200k_base", [CALL])

        # A new stage of the converted journey is judged with the converted ones.
        assembled = op.Span(
            op.stage_attributes(
                sc.STAGE_ASSEMBLED,
                CALL,
                chars=500,
                tokens=150,
                items=5,
                request_id=REQUEST,
                step=2,
            )
        )
        answer = http.post(
            "/v1/traces",
            content=op.proto_body(bytes.fromhex(TRACE), [assembled]),
            headers={"content-type": op.PROTOBUF},
        )
        assert answer.status_code == 200, answer.text
        (report,) = http.get("/api/v1/reports", params={"trace_id": TRACE}).json()["reports"]
        assert [s["stage"] for s in report["stages"]] == ["original", "assembled", "sent"]
        assert report["verdict"] == "silent"
        assert report["transitions"][1]["lost_items"] == 3  # assembled -> sent

    migrate.downgrade(database_url, "0002_alerts")
    engine = make_engine(database_url)
    with engine.connect() as connection:
        records = [
            json.loads(r) if isinstance(r, str) else r
            for r in connection.execute(sa.text("SELECT record FROM measurements")).scalars()
        ]
        detail = connection.execute(sa.text("SELECT detail FROM reports")).scalar_one()
    engine.dispose()
    assert sorted(r["stage"] for r in records) == ["assembled", "original", "sent"]
    original = next(r for r in records if r["stage"] == "original")
    assert (original["item_ids"], original["tool_name"]) == (IDS, "search_kb")
    detail = json.loads(detail) if isinstance(detail, str) else detail
    assert [s["stage"] for s in detail["stages"]] == ["original", "assembled", "sent"]
