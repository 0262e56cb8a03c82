"""Seed 000: 200 order records serialized as the first 20, declared but with no marker,
so the model takes 20 rows for the whole answer. The data and the serializer; the agent
loop is :mod:`ctxledger_cli.agents.openai_orders` (:mod:`.real_agents` runs it)."""

from __future__ import annotations

import json
from typing import Any

import ctxledger

ORDERS_CALL_ID = "call_orders_000"

ORDER_ROWS, ORDER_HEAD_ROWS = 200, 20
_STATUSES = ("paid", "shipped", "delivered", "closed")
_BUYERS = ("张三", "李四", "王五", "赵六", "钱七", "孙八", "周九", "吴十")
_NOTES = (
    "客户要求工作日白天送货，周末家中无人",
    "发票抬头为公司全称，需开具增值税专用发票并随货寄出",
    "老客户复购，赠品已随单附上",
    "地址在园区内，快递需送到三号门岗并电话联系",
    "客户来电确认规格，颜色改为深灰色，其他信息不变",
)
#: Where the seed's ten key facts sit: head (row 2), error rows, ordinary middle, tail.
_KEY_FACTS = {1: 1, 12: 2, 48: 3, 61: 4, 95: 5, 118: 6, 140: 7, 163: 8, 177: 9, 198: 10}
_ERROR_ROWS = {
    12: "E_REFUND_TIMEOUT",
    61: "E_STOCK_MISMATCH",
    118: "E_PAY_DUPLICATE",
    150: "E_REFUND_TIMEOUT",
    177: "E_ADDRESS_INVALID",
}


def _order(i: int) -> dict[str, Any]:
    note = _NOTES[i % len(_NOTES)]
    if i in _KEY_FACTS:
        note = f"KEY-{_KEY_FACTS[i]:02d} {note}"
    error_code = _ERROR_ROWS.get(i)
    return {
        "id": f"ORD-{i + 1:04d}",
        "status": "refunding" if error_code else _STATUSES[i % len(_STATUSES)],
        "amount": round(19.9 + (i * 7919) % 3000 / 10, 2),
        "buyer": _BUYERS[i % len(_BUYERS)],
        "sku": f"SKU-{(i * 31) % 97:03d}",
        "qty": 1 + i % 5,
        "error_code": error_code,
        "note": note,
    }


def order_records(count: int = ORDER_ROWS) -> list[dict[str, Any]]:
    """Seed 000's order records: eight fields each, ten key facts, five error rows."""
    return [_order(i) for i in range(count)]


@ctxledger.tool(serialize=None)
def query_orders(days: int) -> dict[str, Any]:
    """Seed 000's order query: 200 records of eight fields (``original`` only)."""
    return {"tool": "order.query", "items": order_records()}


def serialize_first_rows(result: dict[str, Any], call_id: str) -> str:
    """Keep the first 20 rows as valid JSON; declared, but nothing tells the model."""
    text = json.dumps({**result, "items": result["items"][:ORDER_HEAD_ROWS]}, ensure_ascii=False)
    ctxledger.measure(
        "serialized",
        text,
        tool_call_id=call_id,
        tool_name="query_orders",
        declared=True,
        strategy="head_rows",
        marker=False,
    )
    return text
