"""Agent frameworks audited from their own telemetry, content on and off: a LangChain tool
loop traced by OpenInference's LangChain instrumentation, and a pydantic-ai agent traced
by its own instrumentation. The real packages run in a virtual environment of their own
(tests/e2e/frameworks/requirements.txt, cached), against the provider stand-in, into
real collectors on SQLite and PostgreSQL at once. With content kept off the spans, every
run is ``unauditable`` as soon as its spans are in, naming the setting to change, and
never looks clean."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger_cli.provider import ProviderStandIn, ToolCall
from tests.collector.live_collector import LiveCollector
from tests.e2e.twin_collectors import trace_reports, twin_collectors

from .cached_installs import installed_python
from .helpers import REPO_ROOT

FRAMEWORKS = REPO_ROOT / "tests" / "e2e" / "frameworks"
STRANDS = REPO_ROOT / "tests" / "e2e" / "strands"
ADK = REPO_ROOT / "tests" / "e2e" / "adk"
ADK_CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}
ADK_OLDER = {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}
STRANDS_LATEST = "gen_ai_latest_experimental"
STRANDS_REDACTED = "gen_ai_unredacted_attributes="
#: What each pipeline's journey must be judged, and the items it lost.
PIPELINES = {
    "whole": (sc.VERDICT_INTACT, 0),
    "cut": (sc.VERDICT_SILENT, 25),
    "marker": (sc.VERDICT_DECLARED, 30),
}
INCLUDE_CONTENT = "include_content=True"
#: OpenInference settings (all true) -> the setting the unauditable report must name.
LANGCHAIN_HIDDEN = {
    "OPENINFERENCE_HIDE_INPUTS": "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES": "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    "OPENINFERENCE_HIDE_OUTPUTS": "OPENINFERENCE_HIDE_OUTPUTS",
    "OPENINFERENCE_HIDE_INPUTS,OPENINFERENCE_HIDE_OUTPUTS": "OPENINFERENCE_HIDE_OUTPUTS",
}


@pytest.fixture(scope="module")
def collectors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LiveCollector]]:
    with twin_collectors(tmp_path_factory, "frameworks") as running:
        yield running


@pytest.fixture(scope="module")
def python() -> Path:
    return installed_python(FRAMEWORKS)


@pytest.fixture(scope="module")
def adk_python() -> Path:
    """Google ADK's own environment (with LiteLLM, for its OpenAI-compatible model)."""
    return installed_python(ADK)


@pytest.fixture(scope="module")
def strands_python() -> Path:
    """Strands Agents' own environment (its pins clash with the other frameworks')."""
    return installed_python(STRANDS)


def run_agent(
    python: Path, agent: str, cases: list[str], collectors: dict[str, LiveCollector], **env: str
) -> dict[str, Any]:
    script = [ToolCall("search_orders", {"status": "refunding"}), "Orders A-0000 to A-0039."]
    endpoints = [f"{c.url}/v1/traces" for c in collectors.values()]
    with ProviderStandIn(script=script, loop=True) as llm:
        done = subprocess.run(
            [str(python), str(FRAMEWORKS / agent), ",".join(cases), *endpoints],
            capture_output=True, text=True, timeout=240,
            env={**os.environ, "OPENAI_BASE_URL": llm.base_url, **env},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def check_pipelines(
    runs: dict[str, Any], collectors: dict[str, LiveCollector], source: str
) -> None:
    for database, collector in collectors.items():
        for case, run in runs.items():
            (call,) = run["calls"]
            found = trace_reports(collector, run["trace_id"])
            where = f"{case} on {database}: {json.dumps(found, indent=1)[:3000]}"
            (report,) = found
            verdict, lost = PIPELINES[case.partition("@")[0]]
            assert (report["tool_call_id"], report["verdict"]) == (call, verdict), where
            assert report["lost_items"] == lost, where
            assert report["source"] == source, where
            stages = [s["stage"] for s in report["stages"]]
            assert stages[:2] == [sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT], where


def check_content_off(
    run: dict[str, Any], collectors: dict[str, LiveCollector], setting: str, where: str
) -> list[dict[str, Any]]:
    """Every run with content off holds an unauditable journey naming the setting, settled
    at once; none is a loss. Returns the reports of the first collector."""
    seen = []
    for database, collector in collectors.items():
        found = trace_reports(collector, run["trace_id"])
        said = f"{where} on {database}: {json.dumps(found, indent=1)[:3000]}"
        hidden = [r for r in found if r["verdict"] == sc.VERDICT_UNAUDITABLE]
        assert hidden, said
        for report in hidden:
            assert report["settled"], said
            assert any(setting in note for note in report["notes"]), said
        assert all(r["verdict"] in (sc.VERDICT_UNAUDITABLE, sc.VERDICT_INTACT) for r in found)
        seen.append(found)
    return seen[0]


@pytest.mark.slow
def test_langchain_under_openinference(python: Path, collectors: dict[str, LiveCollector]) -> None:
    """LangChain's ``TOOL`` spans name no ``tool.id``: the ``ToolMessage`` they record
    names the call, so each cut is judged against the tool's own output."""
    runs = run_agent(python, "langchain_agent.py", list(PIPELINES), collectors)
    check_pipelines(runs, collectors, sc.SOURCE_OPENINFERENCE)


@pytest.mark.slow
@pytest.mark.parametrize("hidden", list(LANGCHAIN_HIDDEN))
def test_langchain_with_openinference_hiding_content(
    hidden: str, python: Path, collectors: dict[str, LiveCollector]
) -> None:
    settings = dict.fromkeys(hidden.split(","), "true")
    (run,) = run_agent(python, "langchain_agent.py", ["whole"], collectors, **settings).values()
    found = check_content_off(run, collectors, LANGCHAIN_HIDDEN[hidden], hidden)
    if hidden == "OPENINFERENCE_HIDE_OUTPUTS":
        # The requests show the result, so its journey is judged on them (no drop, no
        # orphan); the tool's hidden output is a journey of its own, not auditable.
        verdicts = sorted((r["tool_call_id"].startswith("tool-span:"), r["verdict"]) for r in found)
        assert verdicts == [(False, sc.VERDICT_INTACT), (True, sc.VERDICT_UNAUDITABLE)], found
    else:
        assert all(r["verdict"] == sc.VERDICT_UNAUDITABLE for r in found), found


@pytest.mark.slow
def test_pydantic_ai_under_its_own_instrumentation(
    python: Path, collectors: dict[str, LiveCollector]
) -> None:
    """Cuts made by a ``ProcessHistory`` capability, and ``include_content=False``."""
    runs = run_agent(python, "pydantic_ai_agent.py", [*PIPELINES, "whole-off"], collectors)
    off = runs.pop("whole-off")
    check_pipelines(runs, collectors, sc.SOURCE_PYDANTIC_AI)
    found = check_content_off(off, collectors, INCLUDE_CONTENT, "include_content=False")
    assert [r["tool_call_id"] for r in found] == off["calls"], found
    assert all(r["verdict"] == sc.VERDICT_UNAUDITABLE for r in found), found


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_pydantic_ai_under_each_instrumentation_version(
    version: int, python: Path, collectors: dict[str, LiveCollector]
) -> None:
    """Every data format pydantic-ai's instrumentation still writes: version 2's
    ``running tool`` spans hold the result as ``tool_response``, 3 to 6 as
    ``gen_ai.tool.call.result``; up to 5 tool returns go as role ``user``, from 6 as
    ``tool``. Each gives the same verdicts, and with content off names the setting."""
    cases = [f"{pipeline}@{version}" for pipeline in PIPELINES]
    runs = run_agent(python, "pydantic_ai_agent.py", [*cases, f"whole-off@{version}"], collectors)
    off = runs.pop(f"whole-off@{version}")
    check_pipelines(runs, collectors, sc.SOURCE_PYDANTIC_AI)
    found = check_content_off(off, collectors, INCLUDE_CONTENT, f"include_content=False@{version}")
    assert all(r["verdict"] == sc.VERDICT_UNAUDITABLE for r in found), found


@pytest.mark.slow
@pytest.mark.parametrize("latest", [False, True], ids=["span-events", "latest-conventions"])
def test_strands_agents_under_its_own_telemetry(
    latest: bool, strands_python: Path, collectors: dict[str, LiveCollector]
) -> None:
    """Strands' messages in the Bedrock Converse shape, as its default span events or the
    latest conventions' event: a cut in a BeforeModelCallEvent hook silent, one with a
    marker declared; with every value redacted, unauditable naming the setting."""
    opt_in = [STRANDS_LATEST] if latest else []
    env = {"OTEL_SEMCONV_STABILITY_OPT_IN": ",".join(opt_in)}
    runs = run_agent(strands_python, "strands_agent.py", list(PIPELINES), collectors, **env)
    check_pipelines(runs, collectors, sc.SOURCE_STRANDS)
    env = {"OTEL_SEMCONV_STABILITY_OPT_IN": ",".join([*opt_in, STRANDS_REDACTED])}
    (off,) = run_agent(
        strands_python, "strands_agent.py", ["whole-off"], collectors, **env
    ).values()
    found = check_content_off(off, collectors, "gen_ai_unredacted_attributes", "redacted")
    assert all(r["verdict"] == sc.VERDICT_UNAUDITABLE for r in found), found


@pytest.mark.slow
@pytest.mark.parametrize("older", [False, True], ids=["genai-spans", "call-llm-spans"])
def test_google_adk_under_its_own_telemetry(
    older: bool, adk_python: Path, collectors: dict[str, LiveCollector]
) -> None:
    """Google ADK through LiteLLM to the stand-in, offline: its GenAI spans (content on
    spans with span_only) or its older call_llm spans; a cut in a before_model_callback
    silent, one with a marker declared; content off unauditable, naming the setting."""
    schema = ADK_OLDER if older else {}
    runs = run_agent(
        adk_python, "adk_agent.py", list(PIPELINES), collectors, **ADK_CONTENT, **schema
    )
    check_pipelines(runs, collectors, sc.SOURCE_ADK)
    off_env = {"ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"} if older else {}
    (off,) = run_agent(
        adk_python, "adk_agent.py", ["whole-off"], collectors, **schema, **off_env
    ).values()
    setting = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    found = check_content_off(off, collectors, setting, "content off")
    assert all(r["verdict"] == sc.VERDICT_UNAUDITABLE for r in found), found
