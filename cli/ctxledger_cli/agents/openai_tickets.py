"""A ticket agent on the ``openai`` client whose context manager drops what is too big.

The model asks for two tools at once: an export of the refund queue (120 tickets) and
the on-call roster. Before each request, ``failure`` runs a pair-safe context manager
(:func:`ctxledger_cli.demo.dropped_result.drop_oversized_exchanges`): a result over
8,000 characters goes together with its call, so the provider accepts the request, and
nobody is told (``dropped``). ``remedy`` clips such a result with
:func:`ctxledger.remedies.clip_rows` as it enters the history (whole tickets, a marker,
declared), so the manager has nothing left to drop. Without a flag nothing is cut.
Instrumentation is the documented few lines: ``run``, ``@ctxledger.tool``,
``measure_messages`` (after the context manager) and the httpx hook.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import ctxledger
from ctxledger.remedies import clip_rows
from ctxledger_cli.agents.common import AgentRun, Mode, new_call_id
from ctxledger_cli.agents.openai_chat import (
    assistant_turn,
    chat_tool,
    instrumented_client,
    requested_calls,
)
from ctxledger_cli.demo import dropped_result as tickets
from ctxledger_cli.provider import Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "ticket-agent"
MAX_STEPS = 4
Message = dict[str, Any]

TOOLS: list[dict[str, Any]] = [
    chat_tool("export_tickets", "Every open ticket of a queue.", queue="string"),
    chat_tool("get_oncall", "Who is on call for a team.", team="string"),
]


@ctxledger.tool  # `original` (the tickets) and `serialized` (their JSON text)
def export_tickets(queue: str) -> dict[str, Any]:
    return {"items": tickets.ticket_records(queue)}


@ctxledger.tool
def get_oncall(team: str) -> dict[str, Any]:
    return tickets.oncall_of(team)


def run_tool(name: str, arguments: dict[str, Any], call_id: str, mode: Mode) -> str:
    if name == "get_oncall":
        return str(get_oncall(str(arguments.get("team", "")), tool_call_id=call_id))
    if name != "export_tickets":
        return json.dumps({"error": f"unknown tool {name!r}"})
    text = str(export_tickets(str(arguments.get("queue", "")), tool_call_id=call_id))
    if mode != "remedy" or len(text) <= tickets.MAX_RESULT_CHARS:
        return text
    clipped = clip_rows(text, budget=tickets.MAX_RESULT_CHARS)
    ctxledger.measure(
        "clipped",  # a custom stage between `serialized` and `assembled`
        clipped.text,
        tool_call_id=call_id,
        tool_name=name,
        order=25,
        **clipped.declaration(),
    )
    return clipped.text


def context_for(messages: list[Message], mode: Mode) -> list[Message]:
    """What of the history goes into the next request."""
    return messages if mode == "plain" else tickets.drop_oversized_exchanges(messages)


def run_ticket_agent(provider_url: str, mode: Mode = "failure", model: str = MODEL) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``)."""
    client = instrumented_client(provider_url)
    messages: list[Message] = [
        {"role": "system", "content": tickets.SYSTEM},
        {"role": "user", "content": tickets.QUESTION},
    ]
    call_ids: list[str] = []
    try:
        with ctxledger.run(AGENT_NAME):
            for step in range(1, MAX_STEPS + 1):
                request = context_for(messages, mode)
                ctxledger.measure_messages(request, model=model)  # `assembled`
                completion = client.chat.completions.create(
                    model=model,
                    messages=request,  # type: ignore[arg-type]
                    tools=TOOLS,  # type: ignore[arg-type]
                )
                message = completion.choices[0].message
                messages.append(assistant_turn(message))
                if not message.tool_calls:
                    return AgentRun(message.content or "", tuple(call_ids), step)
                for call_id, name, arguments in requested_calls(message):
                    content = run_tool(name, arguments, call_id, mode)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                    call_ids.append(call_id)
    finally:
        client.close()
    return AgentRun("(no answer)", tuple(call_ids), MAX_STEPS)


def script(call_ids: Sequence[str] | None = None) -> list[Step]:
    """What the stand-in answers this agent: both tools at once, then the answer."""
    export, oncall = call_ids or (new_call_id("call_export"), new_call_id("call_oncall"))
    calls = (
        ToolCall("export_tickets", {"queue": "退款"}, export),
        ToolCall("get_oncall", {"team": "客服"}, oncall),
    )
    return [Step(tool_calls=calls), Step(text=tickets.ANSWER)]
