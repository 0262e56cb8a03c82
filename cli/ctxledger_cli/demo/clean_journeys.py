"""Clean journeys: small results, unchanged through all four stages, all ``intact``."""

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

CLEAN_CALL_IDS = ("call_order_clean", "call_logistics_clean", "call_policy_clean")


@ctxledger.tool
def get_order(order_id: str) -> dict[str, Any]:
    return {"id": order_id, "status": "shipped", "amount": 899.0, "buyer": "李四"}


@ctxledger.tool
def get_logistics(tracking_no: str) -> dict[str, Any]:
    return {
        "tracking_no": tracking_no,
        "carrier": "顺丰",
        "events": ["已揽收（深圳）", "运输中（杭州转运中心）", "派送中"],
    }


@ctxledger.tool
def get_refund_policy(category: str) -> str:
    return f"{category}类商品签收后 7 天内可无理由退货，拆封后需保证配件齐全。"


def clean_journeys(model: str = DEFAULT_MODEL) -> None:
    """Three small results, two in parallel, nothing trimmed: all ``intact``."""
    order_id, logistics_id, policy_id = CLEAN_CALL_IDS
    with ctxledger.run("cs-agent"):
        messages: list[Message] = [
            {"role": "system", "content": "你是电商客服助手。"},
            {"role": "user", "content": "订单 A-2001 到哪了？还能退货吗？"},
        ]
        send(messages, model)
        messages.append(
            assistant_calls(
                tool_call(order_id, "get_order", {"order_id": "A-2001"}),
                tool_call(logistics_id, "get_logistics", {"tracking_no": "SF1234567890"}),
            )
        )
        messages.append(tool_message(order_id, get_order("A-2001", tool_call_id=order_id)))
        messages.append(
            tool_message(logistics_id, get_logistics("SF1234567890", tool_call_id=logistics_id))
        )
        send(messages, model)
        messages.append(
            assistant_calls(tool_call(policy_id, "get_refund_policy", {"category": "数码"}))
        )
        messages.append(tool_message(policy_id, get_refund_policy("数码", tool_call_id=policy_id)))
        send(messages, model)
