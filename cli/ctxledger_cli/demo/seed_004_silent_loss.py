"""Seed 004: 50 retrieved snippets, a context manager that keeps 16,000 characters, and
a model that sees 20 — a silent loss. Then a small lookup that arrives intact."""

from __future__ import annotations

import json
from typing import Any

import ctxledger
from ctxledger_cli.demo.agent_loop import (
    DEFAULT_MODEL,
    assistant_calls,
    send,
    tool_call,
    tool_message,
)

MAX_CONTEXT_CHARS = 16_000
SEARCH_CALL_ID, LOOKUP_CALL_ID = "call_search_1", "call_order_1"
SYSTEM_PROMPT = (
    "你是企业知识库问答助手。请只依据检索工具返回的知识片段回答用户问题，"
    "引用片段编号，不要编造。" * 60
)
#: Earlier turns of the conversation: the context manager counts them first.
HISTORY: list[dict[str, str]] = [
    message
    for turn in range(8)
    for message in (
        {"role": "user", "content": f"第{turn + 1}个问题：上个月的退款工单为什么被退回？"},
        {
            "role": "assistant",
            "content": f"第{turn + 1}轮回答：根据知识库，工单被退回是因为缺少凭证。" * 30,
        },
    )
]
QUESTION = "退款流程在哪些情况下需要人工审核？请列出所有相关规定。"


def _snippet(i: int) -> dict[str, Any]:
    return {
        "id": f"kb-{i:03d}",
        "score": round(0.95 - i * 0.01, 2),
        "source": f"policy/refund/section-{i // 5 + 1}.md",
        "text": f"第{i + 1}条：退款金额超过阈值或订单状态为 refunding 时，需由值班专员人工审核。"
        * 6,
    }


def knowledge_snippets(count: int = 50) -> list[dict[str, Any]]:
    """Seed 004's retrieved snippets, best first."""
    return [_snippet(i) for i in range(count)]


@ctxledger.tool
def search_knowledge(query: str) -> dict[str, Any]:
    """The retrieval tool: 50 snippets, every one of them present at the source."""
    return {"query": query, "results": knowledge_snippets()}


@ctxledger.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"id": order_id, "status": "refunding", "amount": 1299.0, "buyer": "张三"}


def trim_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seed 004's context manager: counts characters, keeps what fits, says nothing."""
    total = 0
    kept: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content") or ""
        data = json.loads(content) if message.get("role") == "tool" else None
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            rows = []
            for row in data["results"]:
                total += len(json.dumps(row, ensure_ascii=False))
                if total > MAX_CONTEXT_CHARS:
                    break
                rows.append(row)
            data["results"] = rows
            message = {**message, "content": json.dumps(data, ensure_ascii=False)}
        else:
            total += len(content)
        kept.append(message)
    return kept


def run_seed_004(model: str = DEFAULT_MODEL) -> None:
    """Two steps of a knowledge-QA agent: the silent 50 -> 20 loss, then a clean lookup."""
    with ctxledger.run("kb-agent"):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            *HISTORY,
            {"role": "user", "content": QUESTION},
        ]
        send(messages, model)  # step 1: the model answers with a tool call
        search = tool_call(SEARCH_CALL_ID, "search_knowledge", {"query": QUESTION})
        messages.append(assistant_calls(search))
        with ctxledger.tool_call(SEARCH_CALL_ID):
            result = search_knowledge(QUESTION)
        messages.append(tool_message(SEARCH_CALL_ID, result))
        send(trim_messages(messages), model)  # step 2: 50 snippets in, 20 out

        lookup = tool_call(LOOKUP_CALL_ID, "lookup_order", {"order_id": "A-1001"})
        messages.append(assistant_calls(lookup))
        result = lookup_order("A-1001", tool_call_id=LOOKUP_CALL_ID)
        messages.append(tool_message(LOOKUP_CALL_ID, result))
        send(trim_messages(messages), model)  # step 3: the small result arrives intact
