"""An agent on the ``openai`` client whose tools come from a local MCP server.

    python examples/mcp_agent.py            # the MCP result reaches the model: intact
    python examples/mcp_agent.py --failure  # the client cuts it to its limit: silent
    python examples/mcp_agent.py --remedy   # whole rows kept, marked truncated: declared

The MCP server (``mcp_ticket_server.py``, over stdio) answers a ticket search with 300
tickets. Like clients that cap MCP output (``MAX_MCP_OUTPUT_TOKENS``), ``--failure``
cuts the result to its first ``4 × 2,000`` characters (the usual four characters per
token), mid-record and without a word: ctxledger, which measured the result as the
server returned it, reports ``silent``. ``--remedy`` keeps whole tickets within 2,000
tokens with :func:`ctxledger.remedies.clip_rows`, which says ``truncated``, ``kept`` and
``total`` in the JSON: ``declared``.

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url``; ``--collector-url http://127.0.0.1:4318`` sends the spans to a
collector (``ctxledger up``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import openai
from _common import configure, finish, parse_flags, provider, summary
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import ctxledger
from ctxledger.integrations.mcp import instrument_session, result_text
from ctxledger.remedies import Budget, clip_rows

MODEL = "gpt-4o"
MAX_OUTPUT_TOKENS = 2_000
TICKETS_CALL = "call_tickets_1"
SERVER = Path(__file__).with_name("mcp_ticket_server.py")


def limit_output(text: str, mode: str) -> str:
    if mode == "failure":
        return text[: 4 * MAX_OUTPUT_TOKENS]
    if mode == "remedy":
        return clip_rows(text, budget=Budget(tokens=MAX_OUTPUT_TOKENS, encoding="o200k_base")).text
    return text


async def agent_loop(base_url: str, mode: str) -> str:
    llm = openai.AsyncOpenAI(
        base_url=base_url,
        api_key="x",
        http_client=openai.DefaultAsyncHttpxClient(
            event_hooks=ctxledger.httpx_event_hooks(is_async=True)
        ),
    )
    server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        instrument_session(session)
        await session.initialize()
        tools = [
            {"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.inputSchema}}
            for t in (await session.list_tools()).tools
        ]  # fmt: skip
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Which scanner tickets are P1?"}
        ]
        for _ in range(5):
            ctxledger.measure_messages(messages, model=MODEL)
            answer = await llm.chat.completions.create(model=MODEL, messages=messages, tools=tools)  # type: ignore[arg-type]
            message = answer.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                result = await session.call_tool(
                    call.function.name, arguments, tool_call_id=call.id
                )
                content = limit_output(result_text(result), mode)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "no answer within five steps"


def run_agent(mode: str, base_url: str | None = None) -> dict[str, Any]:
    """One run (``mode``: plain, failure or remedy); its trace id, calls and outcome."""
    from ctxledger_cli.provider import ToolCall

    script = [
        ToolCall("query_tickets", {"product": "扫码枪"}, id=TICKETS_CALL),
        "Six P1 tickets: T-0007, T-0057, T-0107, T-0157, T-0207, T-0257.",
    ]
    with provider(base_url, script) as url, ctxledger.run("mcp-agent") as run:
        outcome = asyncio.run(agent_loop(url, mode))
    return summary(run, [TICKETS_CALL], outcome)


def main() -> int:
    flags = parse_flags(__doc__.splitlines()[0])
    configure("mcp-agent", flags)
    return finish(run_agent(flags.mode, flags.provider_url))


if __name__ == "__main__":
    sys.exit(main())
