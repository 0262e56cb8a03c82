"""The Run page with Streamlit's AppTest against a live collector holding the demo."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from ctxledger_cli.demo import real_agents
from tests.dashboard.conftest import APP


def _run_page(**params: str) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page("app_pages/run.py")
    for key, value in params.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_run_page_shows_the_silent_50_to_20_loss_and_the_lost_ids(
    api_env: str, seed_004_trace: str
) -> None:
    app = _run_page(trace_id=seed_004_trace, step="2", tool_call_id="call_search_1")
    assert [t.value for t in app.title] == ["Run of kb-agent"]
    assert {(m.label, m.value) for m in app.metric} == {
        ("lost results", "1"),
        ("silent journeys", "2"),
        ("intact journeys", "1"),
    }
    labels = [e.label for e in app.expander]
    assert labels == [
        "Step 1 · worst: intact",
        "Step 2 · worst: silent",
        "Step 3 · worst: silent",
    ]
    text = " ".join(m.value for m in app.markdown)
    assert "`search_knowledge` · `call_search_1` — lost 30 of 50 items" in text
    assert "**Lost item ids (30):**" in text
    lost_ids = app.code[0].value.split(", ")
    assert lost_ids == [f"kb-{i:03d}" for i in range(20, 50)]
    tables = [t.value for t in app.dataframe]
    # The received row has no item count: the server reports tokens only.
    search = next(t for t in tables if list(t["items"]) == ["50", "50", "20", "20", "—"])
    assert list(search["stage"]) == ["original", "serialized", "assembled", "sent", "received"]
    assert not any((t.astype(str) == "None").any().any() for t in tables)  # no raw None
    assert "**First lost here**" in text
    assert "**Still missing** in step 3: first lost at step 2" in text
    assert "[Link to this step](" in text


def test_run_page_words_and_numbers_agree_with_its_tables(
    api_env: str, seed_004_trace: str
) -> None:
    """Counts with separators and in the right number; the chars a reason says fell are
    the ones the stage table shows; the journey a link opened said in words."""
    app = _run_page(trace_id=seed_004_trace, step="2", tool_call_id="call_search_1")
    text = " ".join(m.value for m in app.markdown)
    assert "· 1 tool result, 1 tool call" in text
    assert not re.search(r"\b1 tool (results|calls)\b", text)
    assert "linked" not in text
    assert "the journey your link points to" in text
    search = next(
        t.value for t in app.dataframe if list(t.value["items"])[:4] == ["50", "50", "20", "20"]
    )
    before, after = search["JSON chars"].iloc[1], search["JSON chars"].iloc[2]
    fell = int(before.replace(",", "")) - int(after.replace(",", ""))
    assert fell == 10_052
    assert f"JSON chars fell by 10,052 \\({before} -> {after};" in text  # "(" escaped
    assert list(search["chars"])[:4] == ["17,149", "17,149", "6,857", "6,857"]


def _orphaned_step_page(api_url: str, tool_call_id: str) -> AppTest:
    """The Run page at the step where the call's journey was judged orphaned."""
    params = {"tool_call_id": tool_call_id}
    reports = httpx.get(f"{api_url}/api/v1/reports", params=params).json()["reports"]
    orphan = next(r for r in reports if r["verdict"] == "orphaned")
    return _run_page(trace_id=orphan["trace_id"], step=str(orphan["step"]))


def test_run_page_shows_a_vanished_orphaned_result_as_lost(api_env: str) -> None:
    """Seed 001's naive trim sent the log's call without its 140-line result."""
    app = _orphaned_step_page(api_env, "call_grep_naive")
    text = " ".join(m.value for m in app.markdown)
    assert "`grep_logs` · `call_grep_naive` — lost 140 of 140 items" in text


def test_run_page_highlights_orphaned_results_in_the_manifest(api_env: str) -> None:
    app = _orphaned_step_page(api_env, "call_customer_orphan")
    errors = " ".join(e.value for e in app.error)
    assert "Results without their call" in errors and "call_customer_orphan" in errors


def test_run_page_without_a_run_lists_recent_runs_with_their_verdicts(api_env: str) -> None:
    app = _run_page()
    runs = app.dataframe[0].value
    assert len(runs) == 9  # one run per demo incident
    assert runs["run"].str.startswith("/run?trace_id=").all()
    kb = runs[runs["agent"] == "kb-agent"].iloc[0]
    assert (kb["worst"], kb["lost results"]) == ("silent", 1)
    assert "silent 2" in kb["verdicts (journeys)"]
    picker = app.selectbox[0]
    assert len(picker.options) == 9
    assert any("kb-agent" in option for option in picker.options)


def test_upper_case_trace_ids_open_the_run(api_env: str, seed_004_trace: str) -> None:
    app = _run_page(trace_id=seed_004_trace.upper())
    assert [t.value for t in app.title] == ["Run of kb-agent"]


def test_a_refusal_shows_the_collectors_message(api_env: str) -> None:
    from ctxledger_dashboard.api_client import CollectorClient, CollectorRefused

    app = _run_page(trace_id="not-a-trace")
    assert "is not a trace id" in app.warning[0].value
    try:
        CollectorClient(api_env).reports(trace_id="xyz")
    except CollectorRefused as refused:
        assert refused.status == 422
        assert refused.message.startswith("trace_id: String should match pattern")
        assert '"detail"' not in refused.message  # the message, not the raw JSON
    else:
        raise AssertionError("the collector accepted a malformed trace id")


def test_unknown_run_and_unreachable_collector_say_so(
    api_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _run_page(trace_id="0" * 32)
    assert "No run with trace id" in app.warning[0].value
    monkeypatch.setenv("CTXLEDGER_API_URL", "http://127.0.0.1:9")
    app = _run_page(trace_id="0" * 32)
    assert "The collector is unreachable" in app.error[0].value
    assert "ctxledger serve" in app.error[0].value


def test_run_page_shows_tokens_sent_vs_read_and_what_fell_out_at_the_server(
    api_env: str,
) -> None:
    """The demo's ollama window: the request left whole, the server read the tail that fit
    its 2,048-token window, and the orders result fell out there."""
    orders, invoice = real_agents.WINDOW_CALL_IDS
    reports = httpx.get(f"{api_env}/api/v1/reports", params={"tool_call_id": orders}).json()
    (dropped,) = reports["reports"]
    received = next(s for s in dropped["stages"] if s["stage"] == "received")["received"]
    app = _run_page(trace_id=dropped["trace_id"], step=str(dropped["step"]))
    text = " ".join(m.value for m in app.markdown)
    read, sent = received["input_tokens"], received["counted_tokens"]
    assert read < 2_048 < sent  # the window, against a request far longer
    assert f"**The model server read {read:,} of the {sent:,} tokens sent**" in text
    assert "the model server (it read fewer tokens than were sent" in text
    lost = received["lost_tokens"]
    assert f"`query_orders` · `{orders}`: dropped, {lost:,} tokens not read" in text
    assert invoice not in text.split("Fell out at the server")[1].split("**Fix**")[0]
    assert "**Fix** (policy `front_discard`)" in text and '`options={"num_ctx": N}`' in text
    assert "emergency_trim" in text and "model-servers-that-discard-silently" in text
    (chart,) = [c for c in _charts(app) if "sent vs read by the model server" in c.proto.spec]
    (dataset,) = chart.proto.datasets
    bars = pa.ipc.open_stream(dataset.data.data).read_pandas()
    assert dict(zip(bars["part"], bars["tokens"], strict=True)) == {
        "sent": sent,
        "read": read,
        "not read": sent - read,
    }


def test_run_page_says_a_request_the_server_read_whole(api_env: str, seed_004_trace: str) -> None:
    """Seed 004's loss is before the request: the server read every token sent."""
    app = _run_page(trace_id=seed_004_trace, step="2", tool_call_id="call_search_1")
    captions = [c.value for c in app.caption if "The model server read" in c.value]
    assert captions and all(c.endswith("every tool result reached it.") for c in captions)
    assert "**The model server read" not in " ".join(m.value for m in app.markdown)


def _charts(app: AppTest) -> list[Any]:
    return list(app.get("vega_lite_chart"))
