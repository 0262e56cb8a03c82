"""A pair-safe context manager that drops a whole oversized exchange, call and result,
and tells nobody: the result is ``dropped``."""

from __future__ import annotations

from typing import Any

import ctxledger
from ctxledger_cli.demo.agent_loop import (
    DEFAULT_MODEL,
    Message,
    assistant_calls,
    send,
    tool_call,
    tool_message,
)

DROP_CALL_IDS = ("call_export_drop", "call_oncall_drop")

MAX_RESULT_CHARS = 8_000


@ctxledger.tool
def export_tickets(queue: str) -> dict[str, Any]:
    tickets = [
        {
            "id": f"TK-{30100 + i}",
            "queue": queue,
            "status": ("待处理", "处理中", "待客户回复")[i % 3],
            "title": f"用户反馈第 {i + 1} 单退款迟迟未到账，要求加急处理",
            "assignee": ("小王", "小李", "小陈")[i % 3],
        }
        for i in range(120)
    ]
    return {"items": tickets}


@ctxledger.tool
def get_oncall(team: str) -> dict[str, Any]:
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


def dropped_result(model: str = DEFAULT_MODEL) -> None:
    """Two parallel calls in step 1; step 2's request carries only the small one."""
    export_id, oncall_id = DROP_CALL_IDS
    with ctxledger.run("ticket-agent"):
        messages: list[Message] = [
            {"role": "system", "content": "你是客服工单助手。"},
            {"role": "user", "content": "退款队列里有哪些工单还没处理？今天谁值班？"},
        ]
        send(messages, model)
        messages.append(
            assistant_calls(
                tool_call(export_id, "export_tickets", {"queue": "退款"}),
                tool_call(oncall_id, "get_oncall", {"team": "客服"}),
            )
        )
        messages.append(tool_message(export_id, export_tickets("退款", tool_call_id=export_id)))
        messages.append(tool_message(oncall_id, get_oncall("客服", tool_call_id=oncall_id)))
        send(drop_oversized_exchanges(messages), model)  # step 2: the export is gone
