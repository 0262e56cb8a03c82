"""Audit the traces people already emit: real agent loops on the real ``openai`` client,
instrumented by OpenTelemetry's ``openai-v2``, OpenInference and OpenLLMetry only (no
ctxledger SDK), exported with the real OTLP exporter over HTTP to real collectors on
SQLite and PostgreSQL at once, judged as a careful engineer would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ctxledger import semconv as sc
from ctxledger_collector.settings import Settings
from tests.collector.conftest import fresh_postgres_database
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, subprocess_env

INSTRUMENTATIONS = ("openai-v2", "openinference", "openllmetry")
PIPELINE_CASES = (
    "row_cut", "char_cut", "reserialized", "marker", "orphan", "drop", "two_agents", "no_call_ids",
)  # fmt: skip
#: What each case's journeys must be judged (per tool call, for the request after it).
EXPECTED = {
    "row_cut": [sc.VERDICT_SILENT],
    "char_cut": [sc.VERDICT_SILENT],
    "reserialized": [sc.VERDICT_INTACT],
    "marker": [sc.VERDICT_DECLARED],
    "orphan": [sc.VERDICT_ORPHANED],
    "drop": [sc.VERDICT_DROPPED],
    "two_agents": [sc.VERDICT_INTACT, sc.VERDICT_INTACT],
    "no_call_ids": [sc.VERDICT_SILENT],
    "length_limit": [sc.VERDICT_UNAUDITABLE],
    "content_off": [sc.VERDICT_UNAUDITABLE],
}
SOURCE = {
    "openai-v2": sc.SOURCE_GENAI,
    "openinference": sc.SOURCE_OPENINFERENCE,
    "openllmetry": sc.SOURCE_GENAI,
}
#: How each instrumentation is told to keep content off its spans.
CONTENT_OFF: dict[str, dict[str, str]] = {
    "openai-v2": {  # an uploading completion hook: the spans carry references only
        "OTEL_INSTRUMENTATION_GENAI_COMPLETION_HOOK": "upload",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "",
    },
    "openinference": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    "openllmetry": {"TRACELOOP_TRACE_CONTENT": "false"},
}


@pytest.fixture(scope="module")
def collectors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LiveCollector]]:
    """A real collector on SQLite and one on PostgreSQL, both fed by every agent run."""
    sqlite = f"sqlite:///{tmp_path_factory.mktemp('zero-sdk') / 'ctxledger.db'}"
    with fresh_postgres_database() as postgres:
        running = {
            name: LiveCollector(
                Settings(database_url=url, auto_migrate=True, sweep_interval_s=3600)
            )
            for name, url in (("sqlite", sqlite), ("postgresql", postgres))
        }
        for collector in running.values():
            collector.__enter__()
        try:
            yield running
        finally:
            for collector in running.values():
                collector.__exit__(None, None, None)


def run_agent(
    instrumentation: str, cases: list[str], collectors: dict[str, LiveCollector], **env: str
) -> dict[str, Any]:
    """The agent loops in a process of their own (one instrumentation per process, as an
    application has), exporting to every collector."""
    settings = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        "PYTHONPATH": str(REPO_ROOT),
        **env,
    }
    environment = subprocess_env(**settings)
    endpoints = [f"{c.url}/v1/traces" for c in collectors.values()]
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.zero_sdk_agent", instrumentation, ",".join(cases),
         *endpoints],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def reports(collector: LiveCollector, trace_id: str) -> list[dict[str, Any]]:
    with collector.client() as client:
        answer = client.get("/api/v1/reports", params={"trace_id": trace_id})
    answer.raise_for_status()
    found: list[dict[str, Any]] = answer.json()["reports"]
    return found


def judged(collector: LiveCollector, run: dict[str, Any]) -> list[dict[str, Any]]:
    """The report of each call the case issued, in the request that follows it (the
    journey without a request when there is none)."""
    found = reports(collector, run["trace_id"])
    chosen = []
    for call in run["calls"]:
        own = [r for r in found if r["tool_call_id"] == call]
        assert own, f"no report for {call}: {found}"
        chosen.append(min(own, key=lambda r: (r["request_id"] is None, r["step"] or 0)))
    return chosen


def check(instrumentation: str, runs: dict[str, Any], collectors: dict[str, LiveCollector]) -> None:
    for database, collector in collectors.items():
        for case, run in runs.items():
            got = judged(collector, run)
            verdicts = [r["verdict"] for r in got]
            where = f"{instrumentation} on {database}, case {case}"
            assert verdicts == EXPECTED[case], f"{where}: {json.dumps(got, indent=1)[:3000]}"
            for report in got:
                assert SOURCE[instrumentation] in report["source"], where
                if report["verdict"] == sc.VERDICT_UNAUDITABLE:
                    assert any("not auditable" in n for n in report["notes"]), where
                    assert report["layer"].startswith("the telemetry"), where
        with collector.client() as client:
            runs_page = client.get("/api/v1/runs", params={"limit": 1000}).json()["runs"]
        listed = {r["trace_id"]: r for r in runs_page}
        for run in runs.values():
            assert SOURCE[instrumentation] in listed[run["trace_id"]]["sources"]


@pytest.mark.slow
@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_pipeline_losses_are_found_from_the_instrumentations_spans(
    instrumentation: str, collectors: dict[str, LiveCollector]
) -> None:
    runs = run_agent(instrumentation, list(PIPELINE_CASES), collectors)
    check(instrumentation, runs, collectors)
    for collector in collectors.values():
        (inferred,) = judged(collector, runs["no_call_ids"])
        assert any("inferred" in note for note in inferred["notes"])
        (silent,) = judged(collector, runs["row_cut"])
        assert silent["lost_items"] == 25
        assert silent["layer"].startswith("between the tool and the request")
        assert [s["stage"] for s in silent["stages"]] == [sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT]


@pytest.mark.slow
@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_the_telemetrys_own_cuts_are_never_judged_as_loss(
    instrumentation: str, collectors: dict[str, LiveCollector], tmp_path: Path
) -> None:
    cut = run_agent(
        instrumentation, ["length_limit"], collectors, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT="4096"
    )
    hidden = run_agent(
        instrumentation,
        ["content_off"],
        collectors,
        ZERO_SDK_CONTENT="off",
        OTEL_INSTRUMENTATION_GENAI_UPLOAD_BASE_PATH=tmp_path.as_uri(),
        **CONTENT_OFF[instrumentation],
    )
    check(instrumentation, {**cut, **hidden}, collectors)


def test_the_dashboard_run_page_shows_a_derived_run(
    collectors: dict[str, LiveCollector], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run judged from spans alone opens on the Run page like any other."""
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP

    runs = run_agent("openai-v2", ["row_cut"], {"sqlite": collectors["sqlite"]})
    trace_id = runs["row_cut"]["trace_id"]
    monkeypatch.setenv("CTXLEDGER_API_URL", collectors["sqlite"].url)
    page = AppTest.from_file(str(APP), default_timeout=60)
    page.switch_page("app_pages/run.py")
    page.query_params["trace_id"] = trace_id
    page.run()
    assert not page.exception, [e.value for e in page.exception]
    shown = " ".join(m.value for m in [*page.markdown, *page.caption])
    assert sc.VERDICT_SILENT in shown and f"evidence: {sc.SOURCE_GENAI}" in shown
    assert httpx.get(f"{collectors['sqlite'].url}/api/v1/runs/{trace_id}").status_code == 200
