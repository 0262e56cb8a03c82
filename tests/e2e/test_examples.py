"""The example agents (examples/, ctxledger_cli/agents/): real loops on the real ``openai``
and ``anthropic`` clients against the provider stand-in, exporting over OTLP to a real
collector (SQLite). Each failure flag gives the seed's verdict, each remedy ``declared``,
and no flag ``intact``. Rerun against one ``ctxledger provider``, an example fails loudly
once the script is used up, until it is rewound or loops; every scripted answer is in the
language of the agent's question."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import ctxledger
from ctxledger.verdicts import worst
from ctxledger_cli.agents import (
    anthropic_kb,
    langgraph_trim,
    mcp_tickets,
    openai_agents_log,
    openai_orders,
    openai_sre,
    openai_tickets,
)
from ctxledger_cli.agents.common import AgentRun, new_call_id
from ctxledger_cli.demo import dropped_result, seed_001_context_overflow, seed_004_silent_loss
from ctxledger_cli.provider import ProviderStandIn, Step, load_script
from ctxledger_cli.query_api import fetch_reports
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, provider_process, run_example, run_python, wait_for


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCollector]:
    database = f"sqlite:///{tmp_path_factory.mktemp('examples') / 'ctxledger.db'}"
    with LiveCollector(
        Settings(database_url=database, auto_migrate=True, sweep_interval_s=3600)
    ) as running:
        yield running


def reports_of(collector: LiveCollector, call_id: str, journeys: int = 1) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def arrived() -> bool:
        found[:] = fetch_reports(collector.url, call_id)
        return len(found) >= journeys

    wait_for(arrived, 30, f"the reports of {call_id}")
    return found


def run_agent(
    collector: LiveCollector,
    agent: Callable[[str, Any], AgentRun],
    script: Callable[[str], Any],
    prefix: str,
    mode: str,
) -> tuple[AgentRun, ProviderStandIn]:
    ctxledger.configure(service_name="examples", endpoint=collector.url, ledger="off")
    try:
        with ProviderStandIn(script=script(new_call_id(prefix))) as stand_in:
            result = agent(stand_in.url, mode)
        assert ctxledger.flush()
    finally:
        ctxledger.configure(service_name="e2e-idle", export=False)
    return result, stand_in


AGENTS = {
    "openai_orders": (openai_orders.run_orders_agent, openai_orders.script, "call_orders"),
    "anthropic_kb": (anthropic_kb.run_kb_agent, anthropic_kb.script, "toolu_kb"),
}


@pytest.mark.parametrize(
    ("agent", "mode", "verdict"),
    [
        ("openai_orders", "failure", "silent"),
        ("openai_orders", "remedy", "declared"),
        ("openai_orders", "plain", "intact"),
        ("anthropic_kb", "failure", "silent"),
        ("anthropic_kb", "remedy", "declared"),
        ("anthropic_kb", "plain", "intact"),
    ],
)
def test_each_flag_gives_the_expected_verdict(
    collector: LiveCollector, agent: str, mode: str, verdict: str
) -> None:
    loop, script, prefix = AGENTS[agent]
    result, stand_in = run_agent(collector, loop, script, prefix, mode)
    if agent == "openai_orders":
        assert result.steps == 2 and len(result.tool_call_ids) == 1
    else:  # search, then an order lookup: the search result travels in two requests
        assert result.steps == 3 and len(result.tool_call_ids) == 2
    call_id = result.tool_call_ids[0]
    journeys = reports_of(collector, call_id, 1 if agent == "openai_orders" else 2)
    assert {report["verdict"] for report in journeys} == {verdict}
    report = journeys[0]
    stages = {stage["stage"]: stage for stage in report["stages"]}
    # every stage the documented lines measure, `sent` from the client's own httpx hook
    assert {"original", "serialized", "assembled", "sent"} <= set(stages)
    total = 200 if agent == "openai_orders" else 50
    assert stages["original"]["items"] == total
    if verdict == "intact":
        assert report["lost_items"] == 0
    else:
        assert report["lost_items"] > 0
    if agent == "anthropic_kb" and mode == "failure":
        assert stages["sent"]["items"] == 20 and report["lost_items"] == 30  # seed 004
    if agent == "anthropic_kb":
        (lookup,) = reports_of(collector, result.tool_call_ids[1])
        assert lookup["verdict"] == "intact"
    # `sent` is what the stand-in received: the tool result's text in the last request
    body = stand_in.requests[-1].json()
    if agent == "openai_orders":
        received = next(m["content"] for m in body["messages"] if m["role"] == "tool")
    else:
        received = next(
            block["content"]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result" and block["tool_use_id"] == call_id
        )
    assert stages["sent"]["chars"] == len(received)


def test_the_examples_run_with_one_command_each(collector: LiveCollector) -> None:
    """From the repository, as a user runs them: the orders agent with its own stand-in;
    the knowledge-base agent against a provider serving the script file that
    `ctxledger provider --script examples/scripts/anthropic_kb.json` would serve."""
    done = run_example("openai_orders_agent.py", "--failure", "--collector-url", collector.url)
    assert "LOSS silent" in done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("tool calls: ")]
    call_id = line.removeprefix("tool calls: ")
    assert worst(r["verdict"] for r in reports_of(collector, call_id)) == "silent"

    script = load_script(REPO_ROOT / "examples/scripts/anthropic_kb.json")
    call_id = script[0].tool_calls[0].id
    assert call_id is not None
    with ProviderStandIn(script=script) as stand_in:
        done = run_example(
            "anthropic_kb_agent.py", "--remedy", "--provider-url", stand_in.url,
            "--collector-url", collector.url,
        )  # fmt: skip
    assert "LOSS declared" in done.stderr and call_id in done.stdout
    assert len(stand_in.requests) == 3
    assert worst(r["verdict"] for r in reports_of(collector, call_id, 2)) == "declared"


#: example -> (its script file, the service name it reports under, its scripted steps)
RERUN = {
    "openai_orders_agent.py": ("openai_orders.json", "orders-agent", 2),
    "anthropic_kb_agent.py": ("anthropic_kb.json", "kb-agent", 3),
}


@pytest.mark.parametrize("example", list(RERUN))
def test_a_rerun_against_the_same_provider_fails_loudly_until_the_script_is_rewound(
    example: str,
) -> None:
    script, agent, turns = RERUN[example]
    with provider_process("--script", f"examples/scripts/{script}") as url:
        flags = ("--provider-url", url, "--ledger", "off")
        first = run_example(example, *flags)
        again = run_python(f"examples/{example}", *flags)
        assert again.returncode == 1, again.stdout
        assert again.stderr.strip().splitlines()[-1] == (
            f"{agent}: the provider answered HTTP 409: ctxledger provider: the script is used "
            f"up after {turns} turns; to rerun it, POST {url}/_ctxledger/reset to rewind it "
            "(or start the stand-in with --loop)"
        )
        assert "answer after" not in again.stdout
        assert httpx.post(f"{url}/_ctxledger/reset").json() == {"rewound": True, "turns": turns}
        assert run_example(example, *flags).stdout == first.stdout


def test_with_loop_an_example_runs_again_against_the_same_provider() -> None:
    with provider_process("--script", "examples/scripts/anthropic_kb.json", "--loop") as url:
        runs = [
            run_example("anthropic_kb_agent.py", "--provider-url", url, "--ledger", "off")
            for _ in range(2)
        ]
    for done in runs:
        assert "answer after 3 steps: 金额超过阈值" in done.stdout
        assert "tool calls: toolu_kb_1, toolu_kb_2" in done.stdout


def _is_chinese(text: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", text) is not None


#: agent -> (the question it asks, the steps its in-process stand-in answers)
QUESTIONS: dict[str, tuple[str, list[Step]]] = {
    "anthropic_kb": (seed_004_silent_loss.QUESTION, anthropic_kb.script()),
    "openai_orders": (openai_orders.QUESTION, openai_orders.script()),
    "openai_sre": (seed_001_context_overflow.QUESTION, openai_sre.script()),
    "openai_tickets": (dropped_result.QUESTION, openai_tickets.script()),
    "langgraph_trim": (langgraph_trim.QUESTION, langgraph_trim.script()),
    "openai_agents_log": (openai_agents_log.QUESTION, openai_agents_log.script()),
    "mcp_tickets": (mcp_tickets.QUESTION, mcp_tickets.script()),
}


@pytest.mark.parametrize("agent", list(QUESTIONS))
def test_each_scripted_answer_is_in_the_language_of_the_question(agent: str) -> None:
    """A Chinese question gets Chinese answers, an English one English answers: in the
    agent's own script and in the script file ``ctxledger provider`` serves it."""
    question, steps = QUESTIONS[agent]
    script_file = REPO_ROOT / "examples" / "scripts" / f"{agent}.json"
    if script_file.exists():
        steps = [*steps, *load_script(script_file)]
    answers = [step.text for step in steps if step.text]
    assert answers
    for answer in answers:
        assert _is_chinese(answer) == _is_chinese(question), (question, answer)


@pytest.mark.parametrize(
    ("flag", "orders_verdict", "read"),
    [
        ("--failure", "dropped", "dropped"),
        ("--remedy", "declared", "kept"),
        (None, "intact", "kept"),
    ],
)
def test_the_ollama_window_example_shows_the_model_servers_discard(
    collector: LiveCollector, flag: str | None, orders_verdict: str, read: str
) -> None:
    """``examples/ollama_window_agent.py``: the server drops the older of two parallel
    results (``--failure``), or the budget-aware emergency trim keeps the request under
    the window and declares what it cut (``--remedy``)."""
    done = run_example(
        "ollama_window_agent.py", *([flag] if flag else []), "--collector-url", collector.url
    )
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("tool calls: ")]
    orders, invoice = line.removeprefix("tool calls: ").split(", ")
    (report,) = reports_of(collector, orders)
    assert report["verdict"] == orders_verdict, report
    stages = {stage["stage"]: stage for stage in report["stages"]}
    assert stages["received"]["received"]["outcome"] == read
    if flag == "--failure":
        assert report["layer_name"] == "model_server"
    if flag == "--remedy":
        assert "emergency_trim" in stages and report["layer_name"] != "model_server"
    (other,) = reports_of(collector, invoice)
    assert other["verdict"] == "intact"
