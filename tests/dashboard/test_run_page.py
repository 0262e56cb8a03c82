"""The Run page with Streamlit's AppTest against a live collector holding the demo."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

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
    search = next(t for t in tables if list(t["items"]) == ["50", "50", "20", "20"])
    assert list(search["stage"]) == ["original", "serialized", "assembled", "sent"]
    assert not any((t.astype(str) == "None").any().any() for t in tables)  # no raw None
    assert "**First lost here**" in text
    assert "**Still missing** in step 3: first lost at step 2" in text
    assert "[Link to this step](" in text


def test_run_page_highlights_orphaned_results_in_the_manifest(api_env: str) -> None:
    import httpx

    report = httpx.get(
        f"{api_env}/api/v1/reports", params={"tool_call_id": "call_customer_orphan"}
    ).json()["reports"]
    orphan = next(r for r in report if r["verdict"] == "orphaned")
    app = _run_page(trace_id=orphan["trace_id"], step=str(orphan["step"]))
    errors = " ".join(e.value for e in app.error)
    assert "Results without their call" in errors and "call_customer_orphan" in errors


def test_run_page_without_a_run_lists_recent_runs_with_their_verdicts(api_env: str) -> None:
    app = _run_page()
    runs = app.dataframe[0].value
    assert len(runs) == 8  # one run per demo incident
    assert runs["run"].str.startswith("/run?trace_id=").all()
    kb = runs[runs["agent"] == "kb-agent"].iloc[0]
    assert (kb["worst"], kb["lost results"]) == ("silent", 1)
    assert "silent 2" in kb["verdicts (journeys)"]
    picker = app.selectbox[0]
    assert len(picker.options) == 8
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


def test_unknown_run_and_unreachable_collector_say_so(api_env: str, monkeypatch) -> None:
    app = _run_page(trace_id="0" * 32)
    assert "No run with trace id" in app.warning[0].value
    monkeypatch.setenv("CTXLEDGER_API_URL", "http://127.0.0.1:9")
    app = _run_page(trace_id="0" * 32)
    assert "The collector is unreachable" in app.error[0].value
    assert "ctxledger serve" in app.error[0].value
