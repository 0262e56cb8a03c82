"""Lost tokens never silently 0 in alerts and metrics: a journey whose stages counted
tokens with different encodings (a tool span naming no model, counted with cl100k_base;
the gpt-4o request that carried its cut result, with o200k_base) reaches a real signed
webhook with its tokens unknown, and /metrics counts it as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from streamlit.testing.v1 import AppTest

from ctxledger import semconv as sc
from ctxledger_dashboard.alert_notifications import tokens_text
from tests.collector.alert_receivers import Receiver
from tests.collector.live_collector import LiveCollector
from tests.collector.test_alerts import (
    SECRET,
    metric,
    reports,
    settings_for,
    webhook,
    with_status,
    write_rules,
)
from tests.dashboard.conftest import APP

ROWS = [{"id": f"A-{i:04d}", "note": f"第{i}单"} for i in range(40)]
CALL = "call_unknown_tokens"


def _messages(rows: list[object] | None) -> str:
    history: list[dict[str, object]] = [
        {"role": "user", "parts": [{"type": "text", "content": "which orders?"}]}
    ]
    if rows is not None:
        history += [
            {"role": "assistant", "parts": [
                {"type": "tool_call", "id": CALL, "name": "search_orders", "arguments": {}}]},
            {"role": "tool", "parts": [
                {"type": "tool_call_response", "id": CALL, "response": rows}]},
        ]  # fmt: skip
    return json.dumps(history, ensure_ascii=False)


def send_a_silent_cut(endpoint: str) -> None:
    """An agent traced with GenAI spans only: it keeps 15 of 40 rows."""
    provider = TracerProvider(resource=Resource.create({"service.name": "tokens-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("tokens-agent")
    chat = {sc.GEN_AI_OPERATION_NAME: "chat", sc.REQUEST_MODEL: "gpt-4o"}
    issued = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": CALL, "name": "search_orders", "arguments": {}}]}])  # fmt: skip
    with tracer.start_as_current_span("invoke_agent tokens-agent"):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                **chat,
                sc.GEN_AI_INPUT_MESSAGES: _messages(None),
                sc.GEN_AI_OUTPUT_MESSAGES: issued,
            },
        ):
            pass  # fmt: skip
        with tracer.start_as_current_span(
            "execute_tool search_orders",
            attributes={
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                sc.TOOL_NAME: "search_orders",
                sc.TOOL_CALL_ID: CALL,
                sc.GEN_AI_TOOL_CALL_RESULT: json.dumps(ROWS, ensure_ascii=False),
            },
        ):
            pass  # fmt: skip
        with tracer.start_as_current_span(
            "chat gpt-4o", attributes={**chat, sc.GEN_AI_INPUT_MESSAGES: _messages(ROWS[:15])}
        ):
            pass  # fmt: skip
    provider.shutdown()


def test_unknown_lost_tokens_reach_the_webhook_metrics_and_dashboard_as_unknown(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Receiver([SECRET]) as receiver:
        rules = write_rules(tmp_path / "alerts.yaml", [webhook("ops", receiver)])
        with LiveCollector(settings_for(database_url, rules)) as collector:
            send_a_silent_cut(f"{collector.url}/v1/traces")
            (report,) = reports(collector.url, tool_call_id=CALL)
            assert report["verdict"] == sc.VERDICT_SILENT
            assert report["lost_tokens"] is None and report["lost_tokens_unknown"]
            (firing,) = with_status(
                receiver.wait_for(lambda rs: bool(with_status(rs, "firing"))), "firing"
            )
            payload = firing.payload
            assert (payload["count"], payload["lost_items"]) == (1, 25)
            assert (payload["lost_tokens"], payload["tokens_unknown"]) == (0, 1)
            (example,) = payload["examples"]
            assert example["lost_tokens"] is None
            name = "ctxledger_journeys_tokens_unknown_total"
            labels = {"verdict": "silent", "agent": "tokens-agent", "tool": "search_orders"}
            assert metric(collector.url, name, **labels) == 1
            assert not metric(collector.url, "ctxledger_lost_tokens_total", **labels)
            # The dashboard's Alerts page shows the notification, its tokens unknown.
            monkeypatch.setenv("CTXLEDGER_API_URL", collector.url)
            app = AppTest.from_file(str(APP), default_timeout=60)
            app.switch_page("app_pages/alerts.py")
            app.run()
            assert not app.exception, [e.value for e in app.exception]
            shown = " ".join(str(m.value) for m in app.markdown)
            assert "25 items and 0 tokens (unknown for 1 journey) lost" in shown
            assert "lost 25 items, unknown tokens" in shown


def test_tokens_text_never_shows_unknown_as_zero() -> None:
    assert tokens_text(None) == "unknown tokens"
    assert tokens_text(1200, 2) == "1,200 tokens (unknown for 2 journeys)"
    assert tokens_text(0) == "0 tokens"
