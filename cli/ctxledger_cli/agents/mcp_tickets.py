"""An agent on the ``openai`` client whose tools come from a local MCP server
(:mod:`.mcp_ticket_server`, over stdio, the ``mcp`` package).

The server answers a ticket search with 300 tickets, then a lookup of one ticket. Like
clients that cap MCP output (``MAX_MCP_OUTPUT_TOKENS``), ``failure`` cuts each result
to its first ``4 × 2,000`` characters (the usual four characters per token), mid-record
and without a word: ctxledger, which measured the result as the server returned it,
reports ``silent``. ``remedy`` keeps whole tickets within 2,000 tokens with
:func:`ctxledger.remedies.clip_rows`, which says ``truncated``, ``kept`` and ``total``
in the JSON: ``declared``. ``plain`` forwards every result whole: ``intact``.
Instrumentation: :func:`ctxledger.integrations.mcp.instrument_session` (``original``),
``measure_messages`` (``assembled``) and the httpx hook (``sent``).

    python examples/mcp_agent.py --failure [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import ctxledger
from ctxledger.integrations.mcp import instrument_session, result_text
from ctxledger.remedies import Budget, clip_rows
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
)
from ctxledger_cli.agents.common import run_with_provider as _run_with_provider
from ctxledger_cli.agents.openai_chat import (
    assistant_turn,
    instrumented_async_client,
    requested_calls,
)
from ctxledger_cli.provider import Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "mcp-ticket-agent"
MAX_OUTPUT_TOKENS = 2_000
MAX_STEPS = 5
QUESTION = "Which scanner tickets are P1, and where is T-0007?"
SERVER_MODULE = "ctxledger_cli.agents.mcp_ticket_server"


def limit_output(text: str, mode: Mode) -> str:
    """What of an MCP result the client forwards to the model."""
    if mode == "failure":
        return text[: 4 * MAX_OUTPUT_TOKENS]
    if mode == "remedy":
        return clip_rows(text, budget=Budget(tokens=MAX_OUTPUT_TOKENS, encoding="o200k_base")).text
    return text


def server_parameters() -> StdioServerParameters:
    """The ticket server as a child of this Python. The whole environment goes along:
    the MCP client passes only a few variables by default, and the child must import
    this package wherever this process found it (``PYTHONPATH`` included)."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", SERVER_MODULE], env=dict(os.environ)
    )


async def agent_loop(provider_url: str, mode: Mode, model: str) -> AgentRun:
    llm = instrumented_async_client(provider_url)
    call_ids: list[str] = []
    async with (
        llm,
        stdio_client(server_parameters()) as (read, write),
        ClientSession(read, write) as session,
    ):
        instrument_session(session)
        await session.initialize()
        tools: Any = [
            {"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.inputSchema}}
            for t in (await session.list_tools()).tools
        ]  # fmt: skip
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        for step in range(1, MAX_STEPS + 1):
            ctxledger.measure_messages(messages, model=model)  # `assembled`
            completion = await llm.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,
            )
            message = completion.choices[0].message
            messages.append(assistant_turn(message))
            if not message.tool_calls:
                return AgentRun(message.content or "", tuple(call_ids), step)
            for call_id, name, arguments in requested_calls(message):
                result = await session.call_tool(
                    name,
                    arguments,
                    tool_call_id=call_id,  # type: ignore[call-arg]
                )
                content = limit_output(result_text(result), mode)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                call_ids.append(call_id)
    return AgentRun("(no answer)", tuple(call_ids), MAX_STEPS)


def run_ticket_agent(provider_url: str, mode: Mode = "plain", model: str = MODEL) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``), with
    its MCP server started for the run."""
    with ctxledger.run(AGENT_NAME):
        return asyncio.run(agent_loop(provider_url, mode, model))


def script(tickets_call_id: str | None = None, ticket_call_id: str | None = None) -> list[Step]:
    """What the stand-in answers this agent: the search, a lookup of one ticket (the
    search result travels again in that request), then the answer."""
    search = ToolCall(
        "query_tickets", {"product": "扫码枪"}, id=tickets_call_id or new_call_id("call_tickets")
    )
    lookup = ToolCall(
        "get_ticket", {"ticket_id": "T-0007"}, id=ticket_call_id or new_call_id("call_ticket")
    )
    return [
        Step(tool_calls=(search,)),
        Step(tool_calls=(lookup,)),
        Step(text="Six P1 tickets: T-0007, T-0057, T-0107, T-0157, T-0207, T-0257; "
                  "T-0007 waits for the customer."),
    ]  # fmt: skip


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    return _run_with_provider(provider_url, script, lambda url: run_ticket_agent(url, mode))


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
