"""The OpenAPI document describes every response of the query API, and real responses
match the models it is generated from. A live collector on SQLite and PostgreSQL, with
data sent over OTLP/HTTP and an alert delivered to a real webhook receiver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ctxledger_collector.query import (
    aggregate_responses,
    alert_responses,
    rejection_responses,
    responses,
)
from tests.collector import otlp_payloads as op
from tests.collector.alert_receivers import Receiver
from tests.collector.live_collector import LiveCollector
from tests.collector.test_alerts import (
    SECRET,
    all_delivered,
    settings_for,
    wait_until,
    webhook,
    write_rules,
)
from tests.collector.test_ingest import CALL, REQUEST, post

QUERY_ROUTES = {
    "/api/v1/reports",
    "/api/v1/runs",
    "/api/v1/runs/{trace_id}",
    "/api/v1/stats/timeline",
    "/api/v1/stats/breakdown",
    "/api/v1/tools/{tool}",
    "/api/v1/alerts",
    "/api/v1/rejections",
}
#: Where the response models live.
RESPONSE_MODULES = (responses, aggregate_responses, alert_responses, rejection_responses)


def test_every_query_route_documents_its_response_and_answers_match_it(
    database_url: str, tmp_path: Path
) -> None:
    with Receiver([SECRET]) as receiver:
        rules = write_rules(tmp_path / "rules.yaml", [webhook("ops", receiver)])
        settings = settings_for(database_url, rules, dashboard_url="http://dash.example")
        with LiveCollector(settings) as collector, collector.client() as http:
            trace_id = op.new_trace_id().hex()
            body = op.proto_body(bytes.fromhex(trace_id), op.journey_spans(CALL, REQUEST))
            assert post(collector, body).status_code == 200
            wait_until(lambda: all_delivered(collector.url, 1), "the alert delivered")

            document = http.get("/openapi.json").json()
            gets = {
                path: item["get"]
                for path, item in document["paths"].items()
                if path.startswith("/api/v1/") and "get" in item
            }
            assert set(gets) == QUERY_ROUTES
            models: dict[str, Any] = {}
            for path, operation in gets.items():
                schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
                component = schema["$ref"].removeprefix("#/components/schemas/")
                assert document["components"]["schemas"][component]["properties"], path
                # the model it documents
                (models[path],) = [
                    getattr(m, component) for m in RESPONSE_MODULES if hasattr(m, component)
                ]

            urls = {
                "/api/v1/reports": "/api/v1/reports",
                "/api/v1/runs": "/api/v1/runs",
                "/api/v1/runs/{trace_id}": f"/api/v1/runs/{trace_id}",
                "/api/v1/stats/timeline": "/api/v1/stats/timeline",
                "/api/v1/stats/breakdown": "/api/v1/stats/breakdown",
                "/api/v1/tools/{tool}": f"/api/v1/tools/{op.TOOL_NAME}",
                "/api/v1/alerts": "/api/v1/alerts",
                "/api/v1/rejections": "/api/v1/rejections",
            }
            assert set(urls) == QUERY_ROUTES
            for path, url in urls.items():
                answer = http.get(url)
                assert answer.status_code == 200, (url, answer.text)
                adapter: TypeAdapter[Any] = TypeAdapter(models[path])
                # Validates, and describes the answer whole: nothing dropped, nothing added.
                parsed = adapter.validate_python(answer.json())
                assert adapter.dump_python(parsed, mode="json") == answer.json(), url
