"""Audit an agent on the Vercel AI SDK from its own telemetry: the real npm packages (``ai``
7, ``@ai-sdk/openai``, ``@ai-sdk/otel``, the OpenTelemetry JS SDK's OTLP/HTTP exporter),
installed by the test into a cached ``node_modules``, against the provider stand-in, into
real collectors on SQLite and PostgreSQL at once. Both integrations, ``generateText`` and
``streamText``: each cut judged in the request that carried it, never a ``dropped`` for
the request that issued the call, content off ``unauditable`` at once."""

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

from .cached_installs import prepared_node_project, require_node
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "vercel_ai"
#: Case -> the verdict of its call's journey (the one in the request that carried it).
EXPECTED = {
    f"{mode}-{pipeline}": verdict
    for mode in ("generate", "stream")
    for pipeline, verdict in (
        ("whole", sc.VERDICT_INTACT),
        ("cut", sc.VERDICT_SILENT),
        ("marker", sc.VERDICT_DECLARED),
        ("whole-off", sc.VERDICT_UNAUDITABLE),
    )
}
#: Integration -> the source its reports name.
INTEGRATIONS = {"otel": sc.SOURCE_GENAI, "legacy": sc.SOURCE_VERCEL_AI}


@pytest.fixture(scope="module")
def collectors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LiveCollector]]:
    with twin_collectors(tmp_path_factory, "vercel-ai") as running:
        yield running


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_node()
    return prepared_node_project(PROJECT, tmp_path_factory.mktemp("vercel-ai-agent"))


def run_agent(project: Path, integration: str, collectors: dict[str, LiveCollector]) -> Any:
    script = [ToolCall("search_orders", {"status": "refunding"}), "Orders A-0000 to A-0039."]
    endpoints = [f"{c.url}/v1/traces" for c in collectors.values()]
    with ProviderStandIn(script=script, loop=True) as llm:
        done = subprocess.run(
            ["node", "agent.mjs", integration, ",".join(EXPECTED), *endpoints],
            cwd=project, capture_output=True, text=True, timeout=180,
            env={**os.environ, "OPENAI_BASE_URL": llm.base_url},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("integration", list(INTEGRATIONS))
def test_the_ai_sdks_own_spans_are_judged_without_a_false_drop(
    integration: str, project: Path, collectors: dict[str, LiveCollector]
) -> None:
    runs = run_agent(project, integration, collectors)
    for database, collector in collectors.items():
        for case, run in runs.items():
            (call,) = run["calls"]
            found = trace_reports(collector, run["trace_id"])
            where = f"{integration} on {database}, {case}: {json.dumps(found, indent=1)[:3000]}"
            # One journey per call: none in the request whose response issued it.
            assert [r["tool_call_id"] for r in found] == [call], where
            (report,) = found
            assert report["verdict"] == EXPECTED[case], where
            assert report["source"] == INTEGRATIONS[integration], where
            assert report["settled"], where
            if case.endswith("-cut"):
                assert report["lost_items"] == 25, where
                assert report["layer"].startswith("between the tool and the request"), where
            if case.endswith("-marker"):
                assert report["lost_items"] == 30, where
            if case.endswith("-off"):
                assert any("recordInputs and recordOutputs" in n for n in report["notes"]), where
            else:
                assert report["request_id"] is not None, where
                assert report["step"] == 2, where
