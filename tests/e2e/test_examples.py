"""The example agents (examples/, ctxledger_cli/agents/): real loops on the real ``openai``
and ``anthropic`` clients against the provider stand-in, exporting over OTLP to a real
collector (SQLite). Each failure flag gives the seed's verdict, each remedy ``declared``,
and no flag ``intact``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import ctxledger
from ctxledger.verdicts import worst
from ctxledger_cli.agents import anthropic_kb, openai_orders
from ctxledger_cli.agents.common import AgentRun, new_call_id
from ctxledger_cli.provider import ProviderStandIn, load_script
from ctxledger_cli.query_api import fetch_reports
from ctxledger_collector.settings import Settings
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, run_example, wait_for


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
