"""The framework agents (``ctxledger_cli/agents``: ``langgraph_trim``,
``openai_agents_log``, ``mcp_tickets``; run from a clone by ``examples/*_agent.py``) with
the real frameworks, against the provider stand-in each starts, exporting with the real
OTLP exporter to a real collector (SQLite), whose verdicts are what a careful engineer
expects. Each flag runs in this process (the frameworks load once); one example also
runs as a user runs it, as a command of its own."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.agents import langgraph_trim, mcp_tickets, openai_agents_log
from ctxledger_cli.agents.common import AgentRun, Mode
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, subprocess_env

AGENTS: dict[str, Callable[[str | None, Mode], AgentRun]] = {
    "langgraph_trim": langgraph_trim.run_with_provider,
    "openai_agents_log": openai_agents_log.run_with_provider,
    "mcp_tickets": mcp_tickets.run_with_provider,
}

#: (agent, mode) -> the verdict of each call the agent made, in its order.
CASES: dict[tuple[str, Mode], list[str]] = {
    ("langgraph_trim", "failure"): [sc.VERDICT_DROPPED, sc.VERDICT_ORPHANED],
    ("langgraph_trim", "remedy"): [sc.VERDICT_DECLARED, sc.VERDICT_INTACT],
    ("langgraph_trim", "plain"): [sc.VERDICT_INTACT, sc.VERDICT_INTACT],
    ("openai_agents_log", "failure"): [sc.VERDICT_SILENT],
    ("openai_agents_log", "remedy"): [sc.VERDICT_DECLARED],
    ("openai_agents_log", "plain"): [sc.VERDICT_INTACT],
    ("mcp_tickets", "failure"): [sc.VERDICT_SILENT, sc.VERDICT_INTACT],
    ("mcp_tickets", "remedy"): [sc.VERDICT_DECLARED, sc.VERDICT_INTACT],
    ("mcp_tickets", "plain"): [sc.VERDICT_INTACT, sc.VERDICT_INTACT],
}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCollector]:
    database = f"sqlite:///{tmp_path_factory.mktemp('examples') / 'ctxledger.db'}"
    settings = Settings(database_url=database, auto_migrate=True, sweep_interval_s=3600)
    with LiveCollector(settings) as running:
        yield running


@pytest.fixture
def exporting_to(collector: LiveCollector) -> Iterator[None]:
    ctxledger.configure(service_name="framework-examples", endpoint=collector.url, spool_dir="off")
    yield
    ctxledger.configure(service_name="e2e-idle", export=False)


def run_command(example: str, flag: str, collector: LiveCollector, tmp: str) -> tuple[str, str]:
    """``examples/<example>.py <flag>`` as a user runs it: (its stdout, its stderr)."""
    env = subprocess_env(CTXLEDGER_SPOOL_DIR="off")
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / f"{example}.py"), flag,
         "--collector-url", collector.url],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout, done.stderr


def verdicts(collector: LiveCollector, call_ids: tuple[str, ...]) -> list[str]:
    """The verdict of each call in the first request that followed it."""
    chosen = []
    with collector.client() as client:
        for call in call_ids:
            answer = client.get("/api/v1/reports", params={"tool_call_id": call})
            answer.raise_for_status()
            own = answer.json()["reports"]
            assert own, f"no report for {call}"
            first = min(own, key=lambda r: (r["request_id"] is None, r["step"] or 0))
            chosen.append(first["verdict"])
    return chosen


@pytest.mark.parametrize(("agent", "mode"), list(CASES), ids=[f"{a}-{m}" for a, m in CASES])
def test_each_mode_is_judged_as_expected(
    agent: str, mode: Mode, collector: LiveCollector, exporting_to: None
) -> None:
    run = AGENTS[agent](None, mode)
    assert ctxledger.flush(30)
    assert verdicts(collector, run.tool_call_ids) == CASES[agent, mode], run
    if agent == "langgraph_trim" and mode == "failure":  # refused as OpenAI does
        assert "must be a response to a preceeding message with 'tool_calls'" in run.answer
    else:
        assert "refused" not in run.answer and run.answer != "(no answer)", run


def test_an_example_runs_as_one_command(collector: LiveCollector, tmp_path: Any) -> None:
    stdout, stderr = run_command("mcp_agent", "--failure", collector, str(tmp_path))
    (line,) = [x for x in stdout.splitlines() if x.startswith("tool calls: ")]
    tickets, ticket = line.removeprefix("tool calls: ").split(", ")
    assert verdicts(collector, (tickets, ticket)) == [sc.VERDICT_SILENT, sc.VERDICT_INTACT]
    assert f"LOSS silent: query_tickets[{tickets}]" in stderr


@pytest.mark.parametrize("agent", list(AGENTS))
def test_each_script_file_answers_what_the_agent_expects(agent: str) -> None:
    """``ctxledger provider --script examples/scripts/<agent>.json`` serves the steps the
    agent's in-process stand-in would (its call ids fixed, the rest the same)."""
    from ctxledger_cli.provider import load_script

    module = {"langgraph_trim": langgraph_trim, "openai_agents_log": openai_agents_log,
              "mcp_tickets": mcp_tickets}[agent]  # fmt: skip
    from_file = load_script(REPO_ROOT / "examples" / "scripts" / f"{agent}.json")

    def without_ids(steps: list[Any]) -> list[Any]:
        return [(s.text, [(c.name, dict(c.arguments)) for c in s.tool_calls]) for s in steps]

    assert without_ids(from_file) == without_ids(module.script())
    assert all(c.id for s in from_file for c in s.tool_calls)
