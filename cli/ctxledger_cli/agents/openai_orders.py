"""An order-query agent on the ``openai`` client (seed 000's data).

The loop: ask, run each tool the model calls, put the result in the history, ask again.
``failure`` cuts each tool result to its first 2,000 characters (``text[:2000]``, the
seed's bug: broken JSON, nothing said); ``remedy`` cuts to the same budget with
:func:`ctxledger.remedies.clip_rows` (whole rows, a marker for the model, declared to the
SDK). Instrumentation is the documented few lines: ``configure`` (in :mod:`.common`),
``run``, ``@ctxledger.tool``, ``measure_messages`` and the httpx hook.

    python examples/openai_orders_agent.py --failure [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ctxledger
from ctxledger.remedies import clip_rows
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
)
from ctxledger_cli.agents.common import run_with_provider as _run_with_provider
from ctxledger_cli.agents.openai_chat import (
    assistant_turn,
    chat_tool,
    instrumented_client,
    requested_calls,
)
from ctxledger_cli.demo.seed_000_first_rows import order_records
from ctxledger_cli.provider import Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "orders-agent"
CUT_CHARS = 2_000
MAX_STEPS = 6
SYSTEM = "你是订单分析助手，只依据工具返回的订单数据回答。"
QUESTION = "近 30 天有哪些异常订单？请列出所有带 KEY 标记的关键事实。"
TOOLS: list[dict[str, Any]] = [
    chat_tool("query_orders", "The orders of the last `days` days.", days="integer")
]


@ctxledger.tool  # `original` (the records) and `serialized` (their JSON text)
def query_orders(days: int) -> dict[str, Any]:
    return {"tool": "order.query", "days": days, "items": order_records()}


def reduce_result(text: str, call_id: str, mode: Mode) -> str:
    """What of the tool's text goes into the history."""
    if mode == "failure":
        return text[:CUT_CHARS]  # the seed's bug: cut mid-record, nothing said
    if mode == "remedy":
        clipped = clip_rows(text, budget=CUT_CHARS)
        ctxledger.measure(
            "clipped",  # a custom stage between `serialized` and `assembled`
            clipped.text,
            tool_call_id=call_id,
            tool_name="query_orders",
            order=25,
            **clipped.declaration(),
        )
        return clipped.text
    return text


#: Runs the order query for (days, tool call id) and returns its text.
OrderTool = Callable[[int, str], str]


def _query_orders_text(days: int, call_id: str) -> str:
    return str(query_orders(days, tool_call_id=call_id))


def run_orders_agent(
    provider_url: str,
    mode: Mode = "plain",
    model: str = MODEL,
    order_tool: OrderTool = _query_orders_text,
) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``).
    ``order_tool`` replaces the tool and its serializer (``ctxledger demo`` plugs in
    seed 000's head-rows serializer there)."""
    client = instrumented_client(provider_url)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    call_ids: list[str] = []
    try:
        with ctxledger.run(AGENT_NAME):
            for step in range(1, MAX_STEPS + 1):
                ctxledger.measure_messages(messages, model=model)  # `assembled`
                completion = client.chat.completions.create(
                    model=model,
                    messages=messages,  # type: ignore[arg-type]
                    tools=TOOLS,  # type: ignore[arg-type]
                )
                message = completion.choices[0].message
                messages.append(assistant_turn(message))
                if not message.tool_calls:
                    return AgentRun(message.content or "", tuple(call_ids), step)
                for call_id, _, arguments in requested_calls(message):
                    text = order_tool(int(arguments.get("days", 30)), call_id)
                    content = reduce_result(text, call_id, mode)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                    call_ids.append(call_id)
    finally:
        client.close()
    return AgentRun("(no answer)", tuple(call_ids), MAX_STEPS)


def script(call_id: str | None = None) -> list[Step]:
    """What the stand-in answers this agent: one order query, then the answer."""
    call = ToolCall("query_orders", {"days": 30}, id=call_id or new_call_id("call_orders"))
    return [Step(tool_calls=(call,)), Step(text="近 30 天有 5 笔异常订单，关键事实见上。")]


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    return _run_with_provider(provider_url, script, lambda url: run_orders_agent(url, mode))


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
