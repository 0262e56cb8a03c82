"""The framework examples (``examples/langgraph_trim_agent.py``, ``openai_agents_agent.py``,
``mcp_agent.py``) with the real frameworks, against the provider stand-in each starts,
exporting with the real OTLP exporter to a real collector (SQLite), whose verdicts are
what a careful engineer expects. Each flag runs in this process (the frameworks load
once); one example also runs as a user runs it, as a command of its own."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

import ctxledger
from ctxledger import semconv as sc
from ctxledger_collector.settings import Settings
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, subprocess_env

#: (example, flag) -> the verdict of each call the example names, in its order.
CASES: dict[tuple[str, str], list[str]] = {
    ("langgraph_trim_agent", "--failure"): [sc.VERDICT_DROPPED, sc.VERDICT_ORPHANED],
    ("langgraph_trim_agent", "--remedy"): [sc.VERDICT_DECLARED, sc.VERDICT_INTACT],
    ("openai_agents_agent", "--failure"): [sc.VERDICT_SILENT],
    ("openai_agents_agent", "--remedy"): [sc.VERDICT_DECLARED],
    ("mcp_agent", "--failure"): [sc.VERDICT_SILENT],
    ("mcp_agent", "--remedy"): [sc.VERDICT_DECLARED],
}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCollector]:
    database = f"sqlite:///{tmp_path_factory.mktemp('examples') / 'ctxledger.db'}"
    settings = Settings(database_url=database, auto_migrate=True, sweep_interval_s=3600)
    with LiveCollector(settings) as running:
        yield running


EXAMPLES = REPO_ROOT / "examples"


def example(name: str) -> ModuleType:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


@pytest.fixture
def exporting_to(collector: LiveCollector) -> Iterator[None]:
    ctxledger.configure(service_name="framework-examples", endpoint=collector.url, spool_dir="off")
    yield
    ctxledger.configure(service_name="e2e-idle", export=False)


def run_command(name: str, flag: str, collector: LiveCollector, tmp: str) -> dict[str, Any]:
    env = subprocess_env(CTXLEDGER_SPOOL_DIR="off")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), flag, "--collector-url", collector.url],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    summary["ledger"] = done.stderr
    return summary


def verdicts(collector: LiveCollector, run: dict[str, Any]) -> list[str]:
    """The verdict of each call in the first request that followed it."""
    with collector.client() as client:
        answer = client.get("/api/v1/reports", params={"trace_id": run["trace_id"]})
    answer.raise_for_status()
    found = answer.json()["reports"]
    chosen = []
    for call in run["calls"]:
        own = [r for r in found if r["tool_call_id"] == call]
        assert own, f"no report for {call}: {found}"
        first = min(own, key=lambda r: (r["request_id"] is None, r["step"] or 0))
        chosen.append(first["verdict"])
    return chosen


@pytest.mark.parametrize(("name", "flag"), list(CASES), ids=[f"{e}{f}" for e, f in CASES])
def test_each_flag_is_judged_as_expected(
    name: str, flag: str, collector: LiveCollector, exporting_to: None
) -> None:
    run = example(name).run_agent(flag.removeprefix("--"))
    assert ctxledger.flush(30)
    assert verdicts(collector, run) == CASES[name, flag], run
    if flag == "--remedy":
        assert "refused" not in run["outcome"]
    elif name == "langgraph_trim_agent":  # the stand-in refuses the orphan as OpenAI does
        assert "must be a response to a preceeding message with 'tool_calls'" in run["outcome"]


def test_an_example_runs_as_one_command(collector: LiveCollector, tmp_path: Any) -> None:
    run = run_command("mcp_agent", "--failure", collector, str(tmp_path))
    assert verdicts(collector, run) == [sc.VERDICT_SILENT]
    assert "LOSS silent: query_tickets[call_tickets_1]" in run["ledger"]
