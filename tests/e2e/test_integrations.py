"""The integrations with the real frameworks (``langchain-core``/``langgraph``,
``openai-agents``, ``mcp``), against the provider stand-in, exporting with the real OTLP
exporter to a real receiver: each stage is measured once, under the right call id, and
matches what the provider received."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any
from uuid import uuid4

import agents
import openai
import pytest
from agents import Agent, ModelSettings, Runner, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client
from ctxledger.integrations.langchain import (
    CtxledgerCallbackHandler,
    to_openai_messages,
    trim_keeping_pairs,
)
from ctxledger.integrations.mcp import instrument_session, result_text
from ctxledger.integrations.openai_agents import CtxledgerTracingProcessor
from ctxledger.remedies import check_pairing
from ctxledger_cli.provider import ProviderStandIn, ToolCall

from .helpers import REPO_ROOT, stage_spans, subprocess_env
from .otlp_receiver import OTLPReceiver

MODEL = "gpt-4o"


def sent_tool_texts(llm_server: ProviderStandIn) -> dict[str, str]:
    """Every tool result the provider received, by call id (chat completions)."""
    found: dict[str, str] = {}
    for request in llm_server.requests:
        for message in json.loads(request.body).get("messages", []):
            if message.get("role") == "tool":
                found[message["tool_call_id"]] = message["content"]
    return found


def digests(receiver: OTLPReceiver, call_id: str) -> dict[str, str]:
    return {
        stage: span.attributes[sc.CONTENT_SHA256]
        for stage, span in stage_spans(receiver.spans, call_id).items()
    }


@tool
def lookup_sku(sku: str) -> str:
    """Stock of one SKU."""
    return json.dumps(
        {"results": [{"id": f"{sku}-{n}", "仓库": "上海", "qty": n} for n in range(30)]}
    )


def test_langchain_handler_measures_tool_end_and_model_input(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver, llm_server: ProviderStandIn
) -> None:
    configure_sdk()
    llm_server.script(ToolCall("lookup_sku", {"sku": "A-1"}, id="call_sku_1"), "42 in stock")
    http_client = openai.DefaultHttpxClient(event_hooks=ctxledger.httpx_event_hooks())
    llm = ChatOpenAI(
        model=MODEL, base_url=llm_server.openai_base_url, api_key="x", http_client=http_client
    ).bind_tools([lookup_sku])
    config: Any = {"callbacks": [CtxledgerCallbackHandler()]}
    with ctxledger.run("langchain-test"):
        history: list[Any] = [HumanMessage("A-1?")]
        history.append(llm.invoke(history, config=config))
        history += [lookup_sku.invoke(call, config=config) for call in history[-1].tool_calls]
        answer = llm.invoke(history, config=config)
    assert answer.content == "42 in stock"
    assert ctxledger.flush()

    received = sent_tool_texts(llm_server)["call_sku_1"]
    stages = stage_spans(receiver.spans, "call_sku_1")
    assert set(stages) == {sc.STAGE_ORIGINAL, sc.STAGE_ASSEMBLED, sc.STAGE_SENT}
    assert len(set(digests(receiver, "call_sku_1").values())) == 1
    assert stages[sc.STAGE_ORIGINAL].attributes[sc.TOOL_NAME] == "lookup_sku"
    assert stages[sc.STAGE_ORIGINAL].attributes[sc.SIZE_CHARS] == len(received)
    assembled, sent = stages[sc.STAGE_ASSEMBLED].attributes, stages[sc.STAGE_SENT].attributes
    assert assembled[sc.REQUEST_ID] == sent[sc.REQUEST_ID]
    assert assembled[sc.STEP] == sent[sc.STEP] == 2


def test_trim_keeping_pairs_keeps_every_message_and_declares_the_trim(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk()
    big, small = "数据" * 4_000, "ok"
    history = [
        HumanMessage("check both"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "scan", "args": {}, "id": "call_big", "type": "tool_call"},
                {"name": "ping", "args": {}, "id": "call_small", "type": "tool_call"},
            ],
        ),
        ToolMessage(big, tool_call_id="call_big", name="scan"),
        ToolMessage(small, tool_call_id="call_small", name="ping"),
    ]
    with ctxledger.run("trim-test"):
        trimmed = trim_keeping_pairs(history, max_tokens=500, model=MODEL)
    assert ctxledger.flush()

    assert [type(m) for m in trimmed] == [type(m) for m in history]
    assert trimmed[2].content == ctxledger.EMERGENCY_TRIM_PLACEHOLDER
    assert trimmed[3].content == small and history[2].content == big  # input untouched
    assert check_pairing(to_openai_messages(trimmed)) == []
    declared = stage_spans(receiver.spans, "call_big")[sc.STAGE_EMERGENCY_TRIM].attributes
    assert declared[sc.TRUNCATION_DECLARED] is True
    assert stage_spans(receiver.spans, "call_small") == {}


@function_tool
def read_ticket(ticket_id: str) -> str:
    """One support ticket."""
    return json.dumps({"id": ticket_id, "body": f"工单 {ticket_id} " + "x" * len(ticket_id) * 50})


def test_agents_processor_matches_parallel_calls_of_one_tool_by_arguments(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver, llm_server: ProviderStandIn
) -> None:
    configure_sdk()
    llm_server.script(
        [
            ToolCall("read_ticket", {"ticket_id": "T-1"}, id="call_t1"),
            ToolCall("read_ticket", {"ticket_id": "T-22"}, id="call_t22"),
        ],
        "two tickets read",
    )
    agents.set_trace_processors([CtxledgerTracingProcessor()])
    client = openai.AsyncOpenAI(base_url=llm_server.openai_base_url, api_key="x")
    agent = Agent(
        name="tickets",
        tools=[read_ticket],
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(parallel_tool_calls=True),
    )
    try:
        with ctxledger.run("agents-test"):
            result = asyncio.run(Runner.run(agent, "read T-1 and T-22"))
    finally:
        agents.set_trace_processors([])
    assert result.final_output == "two tickets read"
    assert ctxledger.flush()

    received = sent_tool_texts(llm_server)
    for call_id, ticket in (("call_t1", "T-1"), ("call_t22", "T-22")):
        stages = stage_spans(receiver.spans, call_id)
        assert set(stages) == {sc.STAGE_ORIGINAL, sc.STAGE_ASSEMBLED, sc.STAGE_SENT}
        assert len(set(digests(receiver, call_id).values())) == 1, call_id
        assert ticket in received[call_id]
        assert stages[sc.STAGE_ORIGINAL].attributes[sc.SIZE_CHARS] == len(received[call_id])


def test_mcp_hook_measures_results_as_the_server_returned_them(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk()
    server = FastMCP("inventory")

    @server.tool()
    def list_bins(aisle: str) -> str:
        """Bins of one aisle."""
        return "\n".join(f"{aisle}-{n:03d} 货架" for n in range(80))

    async def calls() -> list[str]:
        async with create_connected_server_and_client_session(server) as session:
            instrument_session(instrument_session(session))  # hooking twice hooks once
            first = await session.call_tool("list_bins", {"aisle": "A"}, tool_call_id="call_a")
            with ctxledger.tool_call("call_b"):
                second = await session.call_tool("list_bins", {"aisle": "B"})
            return [result_text(first), result_text(second)]

    with ctxledger.run("mcp-test"):
        texts = asyncio.run(calls())
    assert ctxledger.flush()

    for call_id, text in zip(("call_a", "call_b"), texts, strict=True):
        stages = stage_spans(receiver.spans, call_id)
        assert set(stages) == {sc.STAGE_ORIGINAL}
        original = stages[sc.STAGE_ORIGINAL].attributes
        assert original[sc.SIZE_CHARS] == len(text) and original[sc.SIZE_ITEMS] == 80
        assert original[sc.TOOL_NAME] == "list_bins"


def test_the_plain_sdk_imports_no_framework() -> None:
    probe = (
        "import sys, ctxledger, ctxledger.integrations\n"
        "frameworks = ('langchain_core', 'langgraph', 'agents', 'mcp')\n"
        "loaded = [m for m in frameworks if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, env=subprocess_env(),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


class _BrokenSpan:
    trace_id = "trace_broken"

    @property
    def span_data(self) -> Any:
        raise RuntimeError("a span the processor cannot read")


def test_the_integrations_never_raise_into_the_agent(
    configure_sdk: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_sdk()
    monkeypatch.setenv("CTXLEDGER_RAISE_ERRORS", "0")  # as outside pytest
    not_messages: Any = [object()]
    with ctxledger.run("broken-inputs"):
        CtxledgerCallbackHandler().on_chat_model_start({}, [not_messages], run_id=uuid4())
        CtxledgerTracingProcessor().on_span_end(_BrokenSpan())  # type: ignore[arg-type]
        assert trim_keeping_pairs(not_messages, max_tokens=10) == not_messages
    monkeypatch.setenv("CTXLEDGER_RAISE_ERRORS", "1")  # and the failures were real ones
    with pytest.raises(Exception):  # noqa: B017
        CtxledgerCallbackHandler().on_chat_model_start({}, [not_messages], run_id=uuid4())
