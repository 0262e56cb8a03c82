"""A ticket agent whose context manager drops a whole oversized exchange, call and
result, before sending, and tells nobody: the result is ``dropped``.

The data and the context manager; the agent loop is
:mod:`ctxledger_cli.agents.openai_tickets` (:mod:`.real_agents` runs it).
"""

from __future__ import annotations

from typing import Any

DROP_CALL_IDS = ("call_export_drop", "call_oncall_drop")

MAX_RESULT_CHARS = 8_000
SYSTEM = "你是客服工单助手。"
QUESTION = "退款队列里有哪些工单还没处理？今天谁值班？"
ANSWER = "退款队列暂无待处理工单；今天的值班是小李，备岗小陈。"

Message = dict[str, Any]


def ticket_records(queue: str) -> list[dict[str, Any]]:
    """120 open tickets of a queue."""
    return [
        {
            "id": f"TK-{30100 + i}",
            "queue": queue,
            "status": ("待处理", "处理中", "待客户回复")[i % 3],
            "title": f"用户反馈第 {i + 1} 单退款迟迟未到账，要求加急处理",
            "assignee": ("小王", "小李", "小陈")[i % 3],
        }
        for i in range(120)
    ]


def oncall_of(team: str) -> dict[str, Any]:
    return {"team": team, "primary": "小李", "secondary": "小陈", "until": "2026-05-21T09:00Z"}


def drop_oversized_exchanges(messages: list[Message]) -> list[Message]:
    """A pair-safe context manager: a result over MAX_RESULT_CHARS is dropped together
    with its call (so nothing is orphaned), and nobody is told."""
    oversized = {
        m["tool_call_id"]
        for m in messages
        if m.get("role") == "tool" and len(m.get("content") or "") > MAX_RESULT_CHARS
    }
    kept: list[Message] = []
    for message in messages:
        if message.get("role") == "tool" and message["tool_call_id"] in oversized:
            continue
        if message.get("tool_calls"):
            calls = [c for c in message["tool_calls"] if c["id"] not in oversized]
            if not calls:
                continue
            message = {**message, "tool_calls": calls}
        kept.append(message)
    return kept
