"""A knowledge-base agent on the ``anthropic`` client (seed 004's 50 snippets).

Before each request a context manager fits the conversation into 16,000 characters,
counting the system prompt and the history first. ``failure`` is seed 004's manager: it
walks the retrieved snippets and breaks out at the first that does not fit, saying
nothing (50 retrieved, 20 seen: silent). ``remedy`` spends the same budget through
:func:`ctxledger.remedies.clip_rows`: whole snippets, a marker telling the model how
many it sees, declared to the SDK. Instrumentation is the documented few lines:
``configure`` (in :mod:`.common`), ``run``, ``@ctxledger.tool``, ``measure_messages`` and
the httpx hook on the ``anthropic`` client.

    python examples/anthropic_kb_agent.py --failure [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anthropic

import ctxledger
from ctxledger.remedies import clip_rows
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
    shared_ssl_context,
)
from ctxledger_cli.agents.common import run_with_provider as _run_with_provider
from ctxledger_cli.demo.seed_004_silent_loss import (
    HISTORY,
    MAX_CONTEXT_CHARS,
    QUESTION,
    SYSTEM_PROMPT,
    knowledge_snippets,
)
from ctxledger_cli.provider import Step, ToolCall

MODEL = "claude-sonnet-4-5"
AGENT_NAME = "kb-agent"
MAX_STEPS = 6
TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_knowledge",
        "description": "Search the knowledge base; the best snippets first.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
    {
        "name": "lookup_order",
        "description": "One order by id.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
]


@ctxledger.tool  # `original` (the snippets) and `serialized` (their JSON text)
def search_knowledge(query: str) -> dict[str, Any]:
    return {"query": query, "results": knowledge_snippets()}


@ctxledger.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"id": order_id, "status": "refunding", "amount": 1299.0, "buyer": "张三"}


def run_tool(name: str, arguments: dict[str, Any], call_id: str) -> str:
    if name == "lookup_order":
        return str(lookup_order(str(arguments.get("order_id")), tool_call_id=call_id))
    return str(search_knowledge(str(arguments.get("query", QUESTION)), tool_call_id=call_id))


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(b.get("text") or "") for b in content if isinstance(b, dict))


def _fit_result(block: dict[str, Any], used: int, mode: Mode) -> tuple[dict[str, Any], int]:
    """A tool_result block fitted into what is left of the budget; the chars it uses."""
    content = block.get("content")
    if not isinstance(content, str):
        return block, 0
    data = json.loads(content)
    if mode == "plain" or not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return block, len(content)  # the manager trims retrieved snippets only
    if mode == "remedy":
        clipped = clip_rows(content, budget=max(MAX_CONTEXT_CHARS - used, 0))
        ctxledger.measure(
            "fitted",  # a custom stage between `serialized` and `assembled`
            clipped.text,
            tool_call_id=str(block.get("tool_use_id")),
            tool_name="search_knowledge",
            order=25,
            **clipped.declaration(),
        )
        return {**block, "content": clipped.text}, len(clipped.text)
    kept, total = [], used
    for row in data["results"]:  # seed 004's manager: break out at the first misfit
        total += len(json.dumps(row, ensure_ascii=False))
        if total > MAX_CONTEXT_CHARS:
            break
        kept.append(row)
    shrunk = json.dumps({**data, "results": kept}, ensure_ascii=False)
    return {**block, "content": shrunk}, total - used


def fit_context(system: str, messages: list[dict[str, Any]], mode: Mode) -> list[dict[str, Any]]:
    """The messages as the context manager lets them through."""
    used = len(system)
    fitted: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            blocks = []
            for block in content:
                if block.get("type") == "tool_result":
                    block, spent = _fit_result(block, used, mode)
                    used += spent
                blocks.append(block)
            fitted.append({**message, "content": blocks})
        else:
            used += _text_chars(content)
            fitted.append(message)
    return fitted


def run_kb_agent(provider_url: str, mode: Mode = "plain", model: str = MODEL) -> AgentRun:
    """One run of the agent against the provider at ``provider_url``."""
    client = anthropic.Anthropic(
        base_url=provider_url,
        api_key="stand-in",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(
            event_hooks=ctxledger.httpx_event_hooks(), verify=shared_ssl_context()
        ),
    )
    messages: list[dict[str, Any]] = [
        *({"role": m["role"], "content": m["content"]} for m in HISTORY),
        {"role": "user", "content": QUESTION},
    ]
    call_ids: list[str] = []
    try:
        with ctxledger.run(AGENT_NAME):
            for step in range(1, MAX_STEPS + 1):
                outgoing = fit_context(SYSTEM_PROMPT, messages, mode)
                ctxledger.measure_messages(outgoing, model=model)  # `assembled`
                reply = client.messages.create(
                    model=model,
                    max_tokens=1024,
                    system=SYSTEM_PROMPT,
                    messages=outgoing,  # type: ignore[arg-type]
                    tools=TOOLS,  # type: ignore[arg-type]
                )
                blocks = [
                    b.model_dump(include={"type", "id", "name", "input", "text"})
                    for b in reply.content
                ]
                messages.append({"role": "assistant", "content": blocks})
                uses = [b for b in reply.content if b.type == "tool_use"]
                if not uses:
                    answer = "".join(b.text for b in reply.content if b.type == "text")
                    return AgentRun(answer, tuple(call_ids), step)
                results = []
                for use in uses:
                    text = run_tool(use.name, dict(use.input), use.id)
                    results.append({"type": "tool_result", "tool_use_id": use.id, "content": text})
                    call_ids.append(use.id)
                messages.append({"role": "user", "content": results})
    finally:
        client.close()
    return AgentRun("(no answer)", tuple(call_ids), MAX_STEPS)


def script(call_id: str | None = None, lookup_id: str | None = None) -> list[Step]:
    """What the stand-in answers this agent: a search, an order lookup (the search result
    travels again in that request), then the answer."""
    search = ToolCall(
        "search_knowledge", {"query": QUESTION}, id=call_id or new_call_id("toolu_kb")
    )
    lookup = ToolCall(
        "lookup_order", {"order_id": "A-1001"}, id=lookup_id or new_call_id("toolu_kb")
    )
    return [
        Step(tool_calls=(search,)),
        Step(tool_calls=(lookup,)),
        Step(text="金额超过阈值或订单处于 refunding 时需人工审核；订单 A-1001 正在退款。"),
    ]


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    return _run_with_provider(provider_url, script, lambda url: run_kb_agent(url, mode))


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
