"""The Alerts page lists the spans the collector rejected (AppTest, live collector)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import streamlit as st

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector
from tests.dashboard.test_pages import _page, _text


def test_alerts_page_lists_rejected_spans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", auto_migrate=True)
    with LiveCollector(settings) as collector:
        monkeypatch.setenv("CTXLEDGER_API_URL", collector.url)
        assert "No span has been rejected" in _text(_page("app_pages/alerts.py"))

        trace = op.new_trace_id()
        attrs = op.stage_attributes(sc.STAGE_ORIGINAL, "call_x", chars=9, tokens=2, items=1)
        hostile = "<script>alert(1)</script>"
        bad = [
            op.Span({**attrs, sc.SIZE_CHARS: "nine"}),
            op.Span({**attrs, sc.SIZE_CHARS: "ten"}),
        ]
        answer = httpx.post(
            f"{collector.url}/v1/traces",
            content=op.proto_body(trace, bad, service_name=hostile),
            headers={"content-type": op.PROTOBUF},
        )
        assert answer.status_code == 200, answer.text

        st.cache_data.clear()  # the page caches its reads for 5 s
        app = _page("app_pages/alerts.py")
        text = _text(app)
        assert "2 spans rejected at ingest" in text and "`contract` 2" in text
        (table,) = (d.value for d in app.dataframe if "span id" in d.value.columns)
        assert set(table["span id"]) == {span.span_id.hex() for span in bad}
        assert set(table["trace id"]) == {trace.hex()}
        assert set(table["service"]) == {hostile}  # shown as data, verbatim
        assert table["detail"].str.contains(sc.SIZE_CHARS).all()
