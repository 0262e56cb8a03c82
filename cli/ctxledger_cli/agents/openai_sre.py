"""An SRE agent on the ``openai`` client (seed 001's data).

The loop: ask, run each tool the model calls (``grep_logs``, ``list_alerts``,
``get_pods``), put the result in the history, ask again. Three results in, the fourth
request is longer than the provider's context window and the provider refuses it with
its own 400 (``context_length_exceeded``). ``remedy`` retries through
:func:`ctxledger.remedies.call_with_emergency_trim`: the oldest result's content becomes
the placeholder (ids, names and order kept, declared to the SDK) and the retry is
answered. ``failure`` is the trim seed 001 warns against: delete the oldest tool message,
keep the call that asked for it; the provider refuses the retry with its pairing 400 and
the run is over. Without a flag the provider has the model's full window and nothing is
trimmed. Instrumentation is the documented few lines: ``configure`` (in :mod:`.common`),
``run``, ``@ctxledger.tool``, ``measure_messages`` and the httpx hook.

    python examples/openai_sre_agent.py --remedy [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

import ctxledger
from ctxledger.remedies import call_with_emergency_trim, is_context_length_error
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
)
from ctxledger_cli.agents.openai_chat import (
    assistant_turn,
    chat_tool,
    instrumented_client,
    requested_calls,
)
from ctxledger_cli.demo import seed_001_context_overflow as seed_001
from ctxledger_cli.provider import ProviderStandIn, Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "sre-agent"
MAX_STEPS = 6
Message = dict[str, Any]


TOOLS: list[dict[str, Any]] = [
    chat_tool(
        "grep_logs",
        "Log lines of a service matching a pattern.",
        service="string",
        pattern="string",
    ),
    chat_tool("list_alerts", "The alerts firing for a service.", service="string"),
    chat_tool("get_pods", "The pods of a service and their state.", service="string"),
]


@ctxledger.tool  # `original` and `serialized` (the text as it is)
def grep_logs(service: str, pattern: str) -> str:
    return seed_001.log_lines(service, pattern)


@ctxledger.tool  # `original` (the alerts) and `serialized` (their JSON text)
def list_alerts(service: str) -> dict[str, Any]:
    return {"items": seed_001.alert_records(service)}


@ctxledger.tool
def get_pods(service: str) -> dict[str, Any]:
    return {"items": seed_001.pod_records(service)}


def run_tool(name: str, arguments: dict[str, Any], call_id: str) -> str:
    service = str(arguments.get("service", seed_001.SERVICE))
    if name == "grep_logs":
        return str(grep_logs(service, str(arguments.get("pattern", "")), tool_call_id=call_id))
    if name == "list_alerts":
        return str(list_alerts(service, tool_call_id=call_id))
    if name == "get_pods":
        return str(get_pods(service, tool_call_id=call_id))
    return json.dumps({"error": f"unknown tool {name!r}"})


def delete_oldest_result(messages: list[Message]) -> list[Message]:
    """The intuitive trim seed 001 warns against: delete the oldest tool message and keep
    the call that asked for it."""
    oldest = next(i for i, m in enumerate(messages) if m.get("role") == "tool")
    return messages[:oldest] + messages[oldest + 1 :]


#: Sends one request's messages to the model.
Send = Callable[[list[Message]], ChatCompletion]


def refusal(error: openai.APIStatusError) -> str:
    """The provider's own words for a refused request."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return error.message


def ask(send: Send, messages: list[Message], mode: Mode, model: str) -> ChatCompletion:
    """One request of the loop; what happens when the provider says it is too long."""
    if mode == "remedy":  # trim the oldest results to placeholders, retry at once
        return call_with_emergency_trim(send, messages, model=model)
    try:
        return send(messages)
    except openai.BadRequestError as error:
        if mode != "failure" or not is_context_length_error(error):
            raise
        return send(delete_oldest_result(messages))  # refused again: its call is orphaned


def run_sre_agent(
    provider_url: str, mode: Mode = "plain", model: str = MODEL, agent_name: str = AGENT_NAME
) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``)."""
    client = instrumented_client(provider_url)
    messages: list[Message] = [
        {"role": "system", "content": seed_001.SYSTEM},
        {"role": "user", "content": seed_001.QUESTION},
    ]

    sent: list[list[Message]] = []  # every request, retries included: the ledger's steps

    def send(request: list[Message]) -> ChatCompletion:
        sent.append(request)
        return client.chat.completions.create(
            model=model,
            messages=request,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )

    call_ids: list[str] = []
    try:
        with ctxledger.run(agent_name):
            for _ in range(MAX_STEPS):
                # `assembled`; a retry after a refusal is measured as it leaves (`sent`),
                # and the emergency trim declares itself as a stage of that retry
                ctxledger.measure_messages(messages, model=model)
                try:
                    completion = ask(send, messages, mode, model)
                except openai.BadRequestError as error:
                    return AgentRun(f"refused: {refusal(error)}", tuple(call_ids), len(sent))
                message = completion.choices[0].message
                messages.append(assistant_turn(message))
                if not message.tool_calls:
                    return AgentRun(message.content or "", tuple(call_ids), len(sent))
                for call_id, name, arguments in requested_calls(message):
                    content = run_tool(name, arguments, call_id)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                    call_ids.append(call_id)
    finally:
        client.close()
    return AgentRun("(no answer)", tuple(call_ids), len(sent))


def script(call_ids: Sequence[str] | None = None) -> list[Step]:
    """What the stand-in answers this agent: grep, alerts, pods (one per step), then the
    answer. ``call_ids`` fixes the three calls' ids (default: fresh ones)."""
    grep, alerts, pods = call_ids or (
        new_call_id("call_grep"),
        new_call_id("call_alerts"),
        new_call_id("call_pods"),
    )
    service = seed_001.SERVICE
    return [
        Step(tool_calls=(ToolCall("grep_logs", {"service": service, "pattern": "超时"}, grep),)),
        Step(tool_calls=(ToolCall("list_alerts", {"service": service}, alerts),)),
        Step(tool_calls=(ToolCall("get_pods", {"service": service}, pods),)),
        Step(text=seed_001.ANSWER),
    ]


def context_window(mode: Mode) -> int | None:
    """The stand-in's window: seed 001's with a trim to try, else the model's own."""
    return None if mode == "plain" else seed_001.SRE_CONTEXT_WINDOW


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    """Against ``provider_url``, or an in-process stand-in with :func:`context_window`."""
    if provider_url:
        return run_sre_agent(provider_url.rstrip("/"), mode)
    with ProviderStandIn(script=script(), context_window=context_window(mode)) as stand_in:
        return run_sre_agent(stand_in.url, mode)


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
