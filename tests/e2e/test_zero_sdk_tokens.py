"""Tokens of a run judged from an instrumentation's spans alone: the tool span counts its
output with ``cl100k_base`` (it names no model), the request that carried the cut result
counts it with gpt-4o's ``o200k_base``. The tokens lost between them are unknown, and the
API, its aggregates and the Incidents page say so instead of adding 0; the collector knows
gpt-4o's context window as the SDK does. Real agent, real exporter, real collectors on
SQLite and PostgreSQL, the dashboard in AppTest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from ctxledger import semconv as sc
from ctxledger.models import context_window_for_model
from ctxledger_cli.screenshots import browser, capture
from tests.collector.live_collector import LiveCollector
from tests.dashboard.conftest import APP

from .helpers import dashboard_process
from .test_zero_sdk import collectors, judged, run_agent

__all__ = ["collectors"]  # the fixture: a collector of this module's own on each database


@pytest.fixture(scope="module")
def char_cut(collectors: dict[str, LiveCollector]) -> dict[str, Any]:
    """One run: a 200-line log cut to 2,000 chars between the tool and the request."""
    run: dict[str, Any] = run_agent("openai-v2", ["char_cut"], collectors)["char_cut"]
    return run


def test_tokens_counted_with_two_encodings_are_unknown_not_zero(
    collectors: dict[str, LiveCollector], char_cut: dict[str, Any]
) -> None:
    for database, collector in collectors.items():
        (report,) = judged(collector, char_cut)
        where = f"{database}: {report}"
        assert report["verdict"] == sc.VERDICT_SILENT and report["lost_chars"] > 0, where
        assert report["lost_tokens"] is None, where
        why = report["lost_tokens_unknown"] or ""
        assert "cl100k_base" in why and "o200k_base" in why, where
        assert any(note.startswith("lost tokens unknown") for note in report["notes"]), where
        with collector.client() as client:
            rows = client.get("/api/v1/stats/breakdown", params={"by": "tool"}).json()["rows"]
            profile = client.get("/api/v1/tools/read_log").json()
        (row,) = [r for r in rows if r["name"] == "read_log"]
        # The one lost result's tokens are left out of the total, and counted as unknown.
        assert (row["lost_results"], row["result_tokens_unknown"]) == (1, 1), where
        assert (row["tokens_unknown"], row["result_lost_tokens"]) == (1, 0), where
        assert (profile["result_tokens_unknown"], profile["tokens_unknown"]) == (1, 1), where


def test_the_collector_knows_gpt_4o_s_context_window(
    collectors: dict[str, LiveCollector], char_cut: dict[str, Any]
) -> None:
    window = context_window_for_model("gpt-4o")
    assert window == 128_000
    for collector in collectors.values():
        with collector.client() as client:
            run = client.get(f"/api/v1/runs/{char_cut['trace_id']}").json()
        manifests = [
            r["manifest"] for s in run["steps"] for r in s["requests"] if r["manifest"] is not None
        ]
        assert manifests and all(m["model"] == "gpt-4o" for m in manifests)
        assert {m["context_window"] for m in manifests} == {window}
        for m in manifests:  # the provider's count of the request, of gpt-4o's window
            assert m["window_used"] == pytest.approx(m["tokens"] / window, abs=1e-4)


def test_the_dashboard_says_how_many_lost_results_have_unknown_tokens(
    collectors: dict[str, LiveCollector], char_cut: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLEDGER_API_URL", collectors["sqlite"].url)
    incidents = AppTest.from_file(str(APP), default_timeout=60)
    incidents.run()
    assert not incidents.exception, [e.value for e in incidents.exception]
    (lost_tokens,) = [m for m in incidents.metric if m.label == "Lost tokens"]
    assert lost_tokens.value == "0 + 1 unknown"

    run = AppTest.from_file(str(APP), default_timeout=60)
    run.switch_page("app_pages/run.py")
    run.query_params["trace_id"] = char_cut["trace_id"]
    run.run()
    assert not run.exception, [e.value for e in run.exception]
    shown = " ".join(m.value for m in [*run.markdown, *run.caption])
    assert "context window unknown" not in shown
    assert any("of 128,000 tokens" in p.proto.text for p in run.get("progress"))


@pytest.mark.slow
def test_chromium_shows_the_unknown_lost_tokens_and_gpt_4o_s_window(
    collectors: dict[str, LiveCollector], char_cut: dict[str, Any], tmp_path: Path
) -> None:
    with dashboard_process(collectors["postgresql"].url, tmp_path) as url, browser() as chromium:
        incidents = capture(chromium, url + "/", "Lost tokens", tmp_path / "incidents.png")
        run = capture(
            chromium,
            f"{url}/run?trace_id={char_cut['trace_id']}",
            "of 128,000 tokens",
            tmp_path / "run.png",
        )
    assert "0 + 1 unknown" in incidents
    assert "context window unknown" not in run
