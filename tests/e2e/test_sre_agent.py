"""Seed 001's SRE agent and the ticket agent: real loops on the real ``openai`` client
against the provider stand-in. Each flag gives the verdict a careful engineer expects —
the emergency trim declared, the naive trim orphaned, the pair-safe drop dropped, no
flag intact — in the SDK's local ledger and (one test) through a real collector."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxledger
from ctxledger._client import Client
from ctxledger.remedies import assert_paired
from ctxledger.verdicts import Report, worst
from ctxledger_cli.agents import openai_sre, openai_tickets
from ctxledger_cli.agents.common import AgentRun
from ctxledger_cli.demo import dropped_result as tickets
from ctxledger_cli.demo import seed_001_context_overflow as seed_001
from ctxledger_cli.provider import ProviderStandIn, count_messages, load_script
from ctxledger_cli.query_api import fetch_reports
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector

from .helpers import REPO_ROOT, run_example, wait_for

pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]

StandIns = Callable[..., ProviderStandIn]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[tuple[Client, Path]]:
    path = tmp_path / "ledger.txt"
    client = ctxledger.configure(service_name="sre-agent-tests", export=False, ledger=str(path))
    yield client, path
    client.shutdown()
    ctxledger.configure(service_name="e2e-idle", export=False)


def _losses(ledger: tuple[Client, Path]) -> tuple[list[Report], list[str]]:
    client, path = ledger
    assert ctxledger.flush()
    return list(client.ledger.reports), path.read_text(encoding="utf-8").splitlines()


def _sre_run(
    stand_ins: StandIns, mode: str, window: int | None
) -> tuple[AgentRun, list[dict[str, Any]]]:
    """One run of the SRE agent; the bodies of the requests the stand-in received."""
    stand_in = stand_ins(script=openai_sre.script(), context_window=window)
    result = openai_sre.run_sre_agent(stand_in.url, mode)
    return result, [request.json() for request in stand_in.requests]


def _tool_contents(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def _prompt_tokens(body: dict[str, Any]) -> int:
    return count_messages(body["messages"], body["model"], tools=body["tools"])


def test_the_fourth_request_outgrows_the_window_and_the_emergency_trim_is_declared(
    provider_factory: StandIns, ledger: tuple[Client, Path]
) -> None:
    result, bodies = _sre_run(provider_factory, "remedy", seed_001.SRE_CONTEXT_WINDOW)
    grep, alerts, pods = result.tool_call_ids
    assert result.answer == seed_001.ANSWER and result.steps == 5
    # requests 1-3 fit; the 4th (three results) is refused; its retry is trimmed to fit
    assert len(bodies) == 5
    tokens = [_prompt_tokens(body) for body in bodies]
    assert max(tokens[:3]) <= seed_001.SRE_CONTEXT_WINDOW < tokens[3]
    assert tokens[4] <= seed_001.SRE_CONTEXT_WINDOW
    refused, retried = _tool_contents(bodies[3]), _tool_contents(bodies[4])
    assert retried == {**refused, grep: ctxledger.EMERGENCY_TRIM_PLACEHOLDER}
    assert len(bodies[4]["messages"]) == len(bodies[3]["messages"])
    assert_paired(bodies[4]["messages"])

    reports, lines = _losses(ledger)
    [report] = reports
    assert (report.tool_call_id, report.verdict, report.step) == (grep, "declared", 5)
    assert report.tool_name == "grep_logs" and report.agent_name == "sre-agent"
    [lost] = [t for t in report.transitions if t.lost]
    # the retry was built by the trim, not assembled again: the loss is the trim's
    assert (lost.from_stage, lost.to_stage) == ("serialized", "emergency_trim")
    trim = next(m for m in report.stages if m.stage == "emergency_trim")
    assert trim.declared and trim.strategy == "emergency_trim"
    assert "emergency_trim" in trim.markers_found
    for call_id in (alerts, pods):  # the newer results reached the model untouched
        assert any(f"[{call_id}] sent" in line and "step 5" in line for line in lines)


def test_the_naive_trim_orphans_the_call_and_the_provider_refuses_the_retry(
    provider_factory: StandIns, ledger: tuple[Client, Path]
) -> None:
    result, bodies = _sre_run(provider_factory, "failure", seed_001.SRE_CONTEXT_WINDOW)
    grep, alerts, pods = result.tool_call_ids
    assert result.answer.startswith("refused: An assistant message with 'tool_calls'")
    assert grep in result.answer and result.steps == 5
    assert len(bodies) == 5
    retried = bodies[4]["messages"]
    assert set(_tool_contents(bodies[4])) == {alerts, pods}
    assert any(c["id"] == grep for m in retried for c in m.get("tool_calls") or ())
    with pytest.raises(AssertionError, match=grep):
        assert_paired(retried)

    reports, _ = _losses(ledger)
    [report] = reports
    assert (report.tool_call_id, report.verdict, report.step) == (grep, "orphaned", 5)
    assert any(f"carries tool call {grep} without its result" in n for n in report.notes)


@pytest.mark.parametrize("window", [None, seed_001.SRE_CONTEXT_WINDOW])
def test_without_a_trim_nothing_is_lost(
    provider_factory: StandIns, ledger: tuple[Client, Path], window: int | None
) -> None:
    """With the model's window the agent answers; with seed 001's it stops at the
    provider's refusal. Either way every result it sent was whole."""
    result, bodies = _sre_run(provider_factory, "plain", window)
    assert result.steps == len(bodies) == 4
    if window is None:
        assert result.answer == seed_001.ANSWER
    else:
        assert result.answer.startswith("refused: This model's maximum context length is")
        assert _prompt_tokens(bodies[3]) > window
    assert len(_tool_contents(bodies[3])) == 3
    reports, lines = _losses(ledger)
    assert reports == [] and not any(" LOSS " in line for line in lines)
    assert sum("] sent" in line for line in lines) == 6  # 1 + 2 + 3 results sent


@pytest.mark.parametrize(
    ("mode", "verdict", "step"),
    [
        ("failure", "dropped", 2),  # missing from the request at step 2
        ("remedy", "declared", 1),  # clipped as it entered the history, after step 1
    ],
)
def test_the_ticket_agents_oversized_export(
    provider_factory: StandIns, ledger: tuple[Client, Path], mode: str, verdict: str, step: int
) -> None:
    stand_in = provider_factory(script=openai_tickets.script())
    result = openai_tickets.run_ticket_agent(stand_in.url, mode)
    export, oncall = result.tool_call_ids
    assert result.answer == tickets.ANSWER and result.steps == 2
    second = stand_in.requests[1].json()
    calls = [c["id"] for m in second["messages"] for c in m.get("tool_calls") or ()]
    assert_paired(second["messages"])
    reports, _ = _losses(ledger)
    [report] = reports
    assert (report.tool_call_id, report.verdict, report.step) == (export, verdict, step)
    if mode == "failure":  # the whole exchange is gone, and nothing says so
        assert calls == [oncall] and set(_tool_contents(second)) == {oncall}
        assert report.lost_items == 120
        assert any("missing from request" in n for n in report.notes)
    else:
        assert calls == [export, oncall]
        assert len(_tool_contents(second)[export]) <= tickets.MAX_RESULT_CHARS


def test_the_ticket_agent_without_a_flag_sends_everything(
    provider_factory: StandIns, ledger: tuple[Client, Path]
) -> None:
    stand_in = provider_factory(script=openai_tickets.script())
    result = openai_tickets.run_ticket_agent(stand_in.url, "plain")
    assert len(_tool_contents(stand_in.requests[1].json())) == 2
    reports, lines = _losses(ledger)
    assert reports == [] and len(result.tool_call_ids) == 2
    assert all(any(f"[{c}] sent" in line for line in lines) for c in result.tool_call_ids)


# --- through a real collector ----------------------------------------------------------


def _verdicts(collector: LiveCollector, journeys: dict[str, int]) -> list[str]:
    """The worst verdict of each call, once all its journeys (one per request it
    travelled in) have arrived."""
    found: dict[str, list[dict[str, Any]]] = {}

    def arrived() -> bool:
        found.update({c: fetch_reports(collector.url, c) for c in journeys})
        return all(len(found[c]) >= count for c, count in journeys.items())

    wait_for(arrived, 30, f"the journeys {journeys}")
    assert {c: len(found[c]) for c in journeys} == journeys
    return [worst(report["verdict"] for report in found[c]) for c in journeys]


def _sre_journeys(call_ids: tuple[str, ...]) -> dict[str, int]:
    """grep travels in requests 2-5 (4 refused, 5 its retry), alerts in 3-5, pods in 4-5."""
    grep, alerts, pods = call_ids
    return {grep: 4, alerts: 3, pods: 2}


def test_the_example_and_the_ticket_agent_through_a_collector(tmp_path: Path) -> None:
    """As a user runs them: the example with its own stand-in (``--remedy``) and against a
    provider serving its script file (``--failure``); the verdicts are the collector's."""
    database = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    settings = Settings(database_url=database, auto_migrate=True, sweep_interval_s=3600)
    with LiveCollector(settings) as collector:
        done = run_example("openai_sre_agent.py", "--remedy", "--collector-url", collector.url)
        assert "LOSS declared" in done.stderr
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("tool calls: ")]
        remedied = tuple(line.removeprefix("tool calls: ").split(", "))
        verdicts = _verdicts(collector, _sre_journeys(remedied))
        assert verdicts == ["declared", "intact", "intact"]

        script = load_script(REPO_ROOT / "examples/scripts/openai_sre.json")
        naive = tuple(str(call.id) for step in script for call in step.tool_calls)
        window = seed_001.SRE_CONTEXT_WINDOW
        with ProviderStandIn(script=script, context_window=window) as stand_in:
            done = run_example("openai_sre_agent.py", "--failure", "--provider-url", stand_in.url,
                            "--collector-url", collector.url)  # fmt: skip
        assert "LOSS orphaned" in done.stderr and len(stand_in.requests) == 5
        assert _verdicts(collector, _sre_journeys(naive)) == ["orphaned", "intact", "intact"]

        ctxledger.configure(service_name="tickets", endpoint=collector.url, ledger="off")
        try:
            with ProviderStandIn(script=openai_tickets.script()) as stand_in:
                result = openai_tickets.run_ticket_agent(stand_in.url, "failure")
            assert ctxledger.flush()
        finally:
            ctxledger.configure(service_name="e2e-idle", export=False)
        export, oncall = result.tool_call_ids
        assert _verdicts(collector, {export: 1, oncall: 1}) == ["dropped", "intact"]
