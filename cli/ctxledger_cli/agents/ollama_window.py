"""An order agent on the ``openai`` client against a model server that discards the
oldest messages of a prompt longer than its window and answers 200: ollama's way
(ollama#3839), through its OpenAI-compatible endpoint.

The model calls two tools at once: ``query_orders`` (seed 000's 200 orders, far more than
the window) and ``get_invoice`` (one small record). Each result goes into the history
whole. ``failure``: the next request leaves the process whole; the server keeps what
fits from the end, so the orders result falls out and the model answers from the invoice
alone. Only the server's ``prompt_tokens`` shows it: the SDK's ``received`` stage reports
the orders result ``dropped`` at the model server. ``remedy``: before each request the
SDK's budget-aware :func:`ctxledger.remedies.emergency_trim` brings the request under the
window (``target_tokens``), turning the oldest result into its placeholder and declaring
it (``declared``); the server then reads every token sent.

    python examples/ollama_window_agent.py --failure [--collector-url http://127.0.0.1:4318]

Without a flag the stand-in has the model's full window: nothing is lost. With a real
ollama, raise ``options.num_ctx`` (or ``OLLAMA_CONTEXT_LENGTH``) instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from openai.types.chat import ChatCompletion

import ctxledger
from ctxledger.remedies import emergency_trim
from ctxledger_cli.agents.common import AgentRun, Mode, example_main, new_call_id
from ctxledger_cli.agents.openai_chat import (
    assistant_turn,
    chat_tool,
    instrumented_client,
    requested_calls,
)
from ctxledger_cli.demo.seed_000_first_rows import order_records
from ctxledger_cli.provider import ProviderStandIn, Step, ToolCall

MODEL: Final = "gpt-4o"
AGENT_NAME: Final = "ollama-window-agent"
#: ollama's default ``num_ctx`` on a small GPU.
WINDOW: Final = 2_048
#: What the remedy leaves free for the answer.
ANSWER_RESERVE: Final = 512
MAX_STEPS: Final = 4
SYSTEM: Final = "你是订单助手，只依据工具返回的数据回答。"
QUESTION: Final = "近 30 天哪些订单异常？发票 INV-7 的金额是多少？"
TOOLS: list[dict[str, Any]] = [
    chat_tool("query_orders", "The orders of the last `days` days.", days="integer"),
    chat_tool("get_invoice", "One invoice by its id.", invoice_id="string"),
]
ANSWER: Final = "INV-7 的金额是 1,280 元。"


@ctxledger.tool
def query_orders(days: int) -> dict[str, Any]:
    return {"tool": "order.query", "days": days, "items": order_records()}


@ctxledger.tool
def get_invoice(invoice_id: str) -> dict[str, Any]:
    return {"id": invoice_id, "amount": 1280, "currency": "CNY", "status": "paid"}


def run_tool(name: str, arguments: dict[str, Any], call_id: str) -> str:
    if name == "query_orders":
        value: Any = query_orders(int(arguments.get("days", 30)), tool_call_id=call_id)
    else:
        value = get_invoice(str(arguments.get("invoice_id", "")), tool_call_id=call_id)
    return json.dumps(value, ensure_ascii=False)


def run_window_agent(
    provider_url: str, mode: Mode = "plain", model: str = MODEL, agent_name: str = AGENT_NAME
) -> AgentRun:
    """One run against the provider at ``provider_url`` (no ``/v1``)."""
    client = instrumented_client(provider_url)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    call_ids: list[str] = []
    steps = 0

    def send(request: list[dict[str, Any]]) -> ChatCompletion:
        return client.chat.completions.create(
            model=model,
            messages=request,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )

    try:
        with ctxledger.run(agent_name):
            for _ in range(MAX_STEPS):
                steps += 1
                ctxledger.measure_messages(messages, model=model)  # `assembled`
                request = messages
                if mode == "remedy":
                    budget = WINDOW - ANSWER_RESERVE
                    request = emergency_trim(messages, target_tokens=budget, model=model).messages
                message = send(request).choices[0].message
                messages.append(assistant_turn(message))
                if not message.tool_calls:
                    return AgentRun(message.content or "", tuple(call_ids), steps)
                for call_id, name, arguments in requested_calls(message):
                    content = run_tool(name, arguments, call_id)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                    call_ids.append(call_id)
    finally:
        client.close()
    return AgentRun("(no answer)", tuple(call_ids), steps)


def script(call_ids: Sequence[str] | None = None) -> list[Step]:
    """Both tools at once, then the answer. ``call_ids`` fixes the two calls' ids."""
    orders, invoice = call_ids or (new_call_id("call_orders"), new_call_id("call_invoice"))
    return [
        Step(
            tool_calls=(
                ToolCall("query_orders", {"days": 30}, orders),
                ToolCall("get_invoice", {"invoice_id": "INV-7"}, invoice),
            )
        ),
        Step(text=ANSWER),
    ]


def stand_in(mode: Mode, call_ids: Sequence[str] | None = None) -> ProviderStandIn:
    """A stand-in that discards like ollama at :data:`WINDOW` (with a flag), else one
    with the model's full window."""
    if mode == "plain":
        return ProviderStandIn(script=script(call_ids))
    return ProviderStandIn(
        script=script(call_ids), context_window=WINDOW, silent_front_discard=True
    )


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    if provider_url:
        return run_window_agent(provider_url.rstrip("/"), mode)
    with stand_in(mode) as running:
        return run_window_agent(running.url, mode)


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
