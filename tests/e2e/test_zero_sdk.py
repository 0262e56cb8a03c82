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
from tests.collector.live_collector import LiveCollector
from tests.e2e.twin_collectors import trace_reports, twin_collectors

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
    "server_window": [sc.VERDICT_DROPPED, sc.VERDICT_INTACT],
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
#: Each instrumentation's content setting left at (or set to) what keeps messages off its
#: spans: (instrumentation, environment, tool spans with results, the setting the report
#: must name, the instrumentation it must name). "" unsets a variable.
UNSET = ""
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CONTENT_SETTINGS: dict[str, tuple[str, dict[str, str], bool, str, str]] = {
    "openai-v2 capture unset": (
        "openai-v2", {CAPTURE: UNSET}, True, f"{CAPTURE}=span_only", "openai-v2"),
    "openai-v2 capture unset, tool spans without results": (
        "openai-v2", {CAPTURE: UNSET}, False, f"{CAPTURE}=span_only", "openai-v2"),
    "openai-v2 event_only": (
        "openai-v2", {CAPTURE: "event_only"}, True, f"{CAPTURE}=span_only", "openai-v2"),
    "openai-v2 older conventions": (
        "openai-v2", {CAPTURE: "true", "OTEL_SEMCONV_STABILITY_OPT_IN": UNSET}, True,
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental", "openai-v2"),
    "openinference OPENINFERENCE_HIDE_INPUTS": (
        "openinference", {"OPENINFERENCE_HIDE_INPUTS": "true"}, True,
        "OPENINFERENCE_HIDE_INPUTS", "OpenInference"),
    "openinference OPENINFERENCE_HIDE_OUTPUTS": (
        "openinference", {"OPENINFERENCE_HIDE_OUTPUTS": "true"}, True,
        "OPENINFERENCE_HIDE_OUTPUTS", "OpenInference"),
    "openinference OPENINFERENCE_HIDE_INPUT_MESSAGES": (
        "openinference", {"OPENINFERENCE_HIDE_INPUT_MESSAGES": "true"}, True,
        "OPENINFERENCE_HIDE_INPUT_MESSAGES", "OpenInference"),
    "openllmetry TRACELOOP_TRACE_CONTENT=false": (
        "openllmetry", {"TRACELOOP_TRACE_CONTENT": "false"}, True, "TRACELOOP_TRACE_CONTENT",
        "OpenLLMetry"),
    "openllmetry TRACELOOP_TRACE_CONTENT=false, tool spans without results": (
        "openllmetry", {"TRACELOOP_TRACE_CONTENT": "false"}, False, "TRACELOOP_TRACE_CONTENT",
        "OpenLLMetry"),
}  # fmt: skip


@pytest.fixture(scope="module")
def collectors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LiveCollector]]:
    with twin_collectors(tmp_path_factory, "zero-sdk") as running:
        yield running


def run_agent(
    instrumentation: str, cases: list[str], collectors: dict[str, LiveCollector], **env: str
) -> dict[str, Any]:
    """The agent loops in a process of their own (one instrumentation per process, as an
    application has), exporting to every collector. A setting given as "" is unset."""
    settings = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        "PYTHONPATH": str(REPO_ROOT),
        **env,
    }
    environment = {k: v for k, v in subprocess_env(**settings).items() if v != UNSET}
    endpoints = [f"{c.url}/v1/traces" for c in collectors.values()]
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.zero_sdk_agent", instrumentation, ",".join(cases),
         *endpoints],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def judged(collector: LiveCollector, run: dict[str, Any]) -> list[dict[str, Any]]:
    """The report of each call the case issued, in the request that follows it (the
    journey without a request when there is none)."""
    found = trace_reports(collector, run["trace_id"])
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
        stages = [s["stage"] for s in silent["stages"]]
        assert stages == [sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT, sc.STAGE_RECEIVED]
        # The span's usage met the request as the span shows it: the server read it all.
        assert silent["stages"][-1]["received"]["outcome"] == "kept"


#: How the server's discard of a whole result is judged from each instrumentation's span:
#: OpenInference names neither the server's host nor its fingerprint, so the policy is
#: unknown and only the part of the result inside the certain discard counts as lost.
SERVER_DROP = {
    "openai-v2": (sc.VERDICT_DROPPED, "dropped"),
    "openllmetry": (sc.VERDICT_DROPPED, "dropped"),
    "openinference": (sc.VERDICT_SILENT, "cut"),
}


@pytest.mark.slow
@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_the_model_servers_discard_is_found_from_the_spans_usage(
    instrumentation: str, collectors: dict[str, LiveCollector]
) -> None:
    runs = run_agent(instrumentation, ["server_window"], collectors, ZERO_SDK_SERVER_WINDOW="600")
    verdict, outcome = SERVER_DROP[instrumentation]
    for database, collector in collectors.items():
        old, new = judged(collector, runs["server_window"])
        where = f"{instrumentation} on {database}: {json.dumps([old, new], indent=1)[:4000]}"
        assert (old["verdict"], new["verdict"]) == (verdict, sc.VERDICT_INTACT), where
        assert old["layer"].startswith("the model server"), where
        (transition,) = [t for t in old["transitions"] if t["verdict"] != sc.VERDICT_INTACT]
        assert (transition["from_stage"], transition["to_stage"]) == (
            sc.STAGE_LLM_INPUT,
            sc.STAGE_RECEIVED,
        ), where
        read = {r["tool_call_id"]: r["stages"][-1]["received"] for r in (old, new)}
        assert read[old["tool_call_id"]]["outcome"] == outcome, where
        assert read[new["tool_call_id"]]["outcome"] == "kept", where
        assert read[old["tool_call_id"]]["input_tokens"] < 600, where
        assert read[old["tool_call_id"]]["exact"] is False, where  # gpt-4o, not at OpenAI


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.8, 1.2, 0.55])
def test_a_tokenizer_difference_is_never_a_loss(
    scale: float, collectors: dict[str, LiveCollector]
) -> None:
    """The server counts with another tokenizer (the stand-in reports ``scale`` times the
    model's own count) and keeps everything: within the approximate tokenizer's tolerance
    (30 %, gpt-4o served elsewhere than OpenAI) the journey is intact; a server reporting
    45 % fewer tokens than were sent is a loss, whatever the reason."""
    runs = run_agent("openai-v2", ["reserialized"], collectors, ZERO_SDK_COUNT_SCALE=str(scale))
    for database, collector in collectors.items():
        (report,) = judged(collector, runs["reserialized"])
        where = f"scale {scale} on {database}: {json.dumps(report, indent=1)[:3000]}"
        received = report["stages"][-1]["received"]
        assert received is not None and received["exact"] is False, where
        if scale == 0.55:
            assert report["verdict"] in (sc.VERDICT_SILENT, sc.VERDICT_DROPPED), where
            assert report["layer"].startswith("the model server"), where
        else:
            assert report["verdict"] == sc.VERDICT_INTACT, where
            assert received["outcome"] == "kept", where


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


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(CONTENT_SETTINGS))
def test_content_kept_off_the_spans_is_unauditable_at_once_naming_the_setting(
    shape: str, collectors: dict[str, LiveCollector]
) -> None:
    """The instrumentation's default (or chosen) content setting keeps the messages off its
    spans: each journey is unauditable as soon as the spans are in (no grace period: the
    collectors wait an hour before sweeping), its notes naming the instrumentation and the
    setting to change, never intact while it waits."""
    instrumentation, env, tool_results, setting, named = CONTENT_SETTINGS[shape]
    runs = run_agent(
        instrumentation,
        ["content_off"],
        collectors,
        ZERO_SDK_CONTENT="on" if tool_results else "off",
        **env,
    )
    for database, collector in collectors.items():
        for report in judged(collector, runs["content_off"]):
            where = f"{shape} on {database}: {json.dumps(report, indent=1)[:3000]}"
            assert report["verdict"] == sc.VERDICT_UNAUDITABLE, where
            assert report["settled"], where
            assert report["layer"].startswith("the telemetry"), where
            assert any(setting in n and named in n for n in report["notes"]), where


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
