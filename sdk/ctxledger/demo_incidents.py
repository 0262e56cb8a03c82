"""Scripted incidents from the seeds: each one small agent run, hence its own trace.

No LLM and no network. Every incident plays the loop a real agent runs: the tool is
``@ctxledger.tool`` (``original``, ``serialized``), the messages about to be sent go
through ``measure_messages`` (``assembled``) and the request body bytes through
``measure_request`` (``sent`` plus the request manifest), as the httpx hook would.
Between them sits the context step each seed is about, losing data or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import ctxledger

Message = dict[str, Any]
DEFAULT_MODEL = "gpt-4o"

# Tool call ids, unique across the incidents so each can be looked up by id.
LOG_CALL_ID = "call_log_002"
ORDERS_CALL_ID = "call_orders_000"
TRIM_CALL_IDS = ("call_grep_001", "call_alerts_001", "call_pods_001")
ORPHAN_CALL_IDS = ("call_grep_orphan", "call_alerts_orphan", "call_pods_orphan")
DROP_CALL_IDS = ("call_export_drop", "call_oncall_drop")
CLEAN_CALL_IDS = ("call_order_clean", "call_logistics_clean", "call_policy_clean")


# --- the agent loop's plumbing ------------------------------------------------------


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    arguments_text = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments_text},
    }


def assistant_calls(*calls: dict[str, Any]) -> Message:
    """An assistant message that asks for one or more tool calls (OpenAI Chat format)."""
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def tool_message(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def request_body(messages: list[Message], model: str) -> bytes:
    return json.dumps({"model": model, "messages": messages}, ensure_ascii=False).encode("utf-8")


def body_chars(messages: list[Message]) -> int:
    """The size of a request's messages in characters, the scripts' stand-in for tokens."""
    return len(json.dumps(messages, ensure_ascii=False))


def send(messages: list[Message], model: str) -> None:
    """One LLM request: ``assembled`` from the messages, ``sent`` from the body bytes."""
    ctxledger.measure_messages(messages, model=model)
    ctxledger.measure_request(request_body(messages, model), model=model)


# --- seed 002: a 500-line log, head 40 + tail 20 with a marker ---------------------

LOG_PATH = "/var/log/pay/pay-service.log"
LOG_HEAD_LINES, LOG_TAIL_LINES = 40, 20
_ERROR_STACK = (
    "2026-03-14 03:11:58.412 ERROR [pay-worker-3] 支付回调处理失败 order=A-10488 channel=wechat",
    "java.lang.IllegalStateException: 数据库连接池已耗尽 (active=200, max=200, waiting=57)",
    "\tat com.shop.pay.db.PoolGuard.acquire(PoolGuard.java:88)",
    "\tat com.shop.pay.db.TxTemplate.execute(TxTemplate.java:41)",
    "\tat com.shop.pay.callback.WechatCallbackHandler.handle(WechatCallbackHandler.java:132)",
    "\tat com.shop.pay.callback.CallbackDispatcher.dispatch(CallbackDispatcher.java:67)",
    "Caused by: java.sql.SQLTransientConnectionException: 获取连接超时 30000ms",
    "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)",
    "\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:181)",
    "2026-03-14 03:11:59.020 ERROR [pay-worker-1] 支付回调处理失败 order=A-10489 同上",
    "2026-03-14 03:12:00.003 WARN  [supervisor] 健康检查连续 3 次失败，重启 pay-service",
    "2026-03-14 03:12:04.771 INFO  [main] pay-service 启动完成，耗时 4.2s",
)


def _log_line(i: int) -> str:
    minutes, seconds = divmod(7200 + i * 8, 60)
    hours, minutes = divmod(minutes, 60)
    channel = ("wechat", "alipay", "unionpay")[i % 3]
    return (
        f"2026-03-14 {hours:02d}:{minutes:02d}:{seconds:02d}.{i * 37 % 1000:03d} INFO  "
        f"[pay-worker-{i % 4}] 支付回调处理完成 order=A-{10000 + i} channel={channel} "
        f"耗时={8 + i * 7 % 40}ms"
    )


@ctxledger.tool
def read_log(path: str) -> str:
    """Seed 002's log tool: ~500 lines, the error stack at the very end."""
    lines = [_log_line(i) for i in range(500 - len(_ERROR_STACK))]
    return "\n".join([*lines, *_ERROR_STACK])


def clip_head_tail(text: str, head: int = LOG_HEAD_LINES, tail: int = LOG_TAIL_LINES) -> str:
    """Seed 002's clipper: head and tail kept, the middle replaced by a visible marker."""
    lines = text.splitlines()
    if len(lines) <= head + tail:
        return text
    omitted = len(lines) - head - tail
    marker = (
        f"…[已截断：共 {len(lines)} 行，省略中间 {omitted} 行；可用 offset/pattern 参数查看更多]…"
    )
    return "\n".join([*lines[:head], marker, *lines[-tail:]])


def seed_002_log_clip(model: str = DEFAULT_MODEL) -> None:
    """A declared head+tail clip: the model sees the marker and the error stack."""
    with ctxledger.run("log-agent"):
        messages: list[Message] = [
            {"role": "system", "content": "你负责排查线上故障。只看到部分日志时要明确说明。"},
            {"role": "user", "content": f"支付服务 03:12 为什么重启了？日志在 {LOG_PATH}。"},
        ]
        send(messages, model)  # step 1: the model asks for the log
        messages.append(assistant_calls(tool_call(LOG_CALL_ID, "read_log", {"path": LOG_PATH})))
        clipped = clip_head_tail(read_log(LOG_PATH, tool_call_id=LOG_CALL_ID))
        ctxledger.measure(
            "clipped",
            clipped,
            tool_call_id=LOG_CALL_ID,
            tool_name="read_log",
            order=25,
            declared=True,
            strategy="head_tail",
        )
        messages.append(tool_message(LOG_CALL_ID, clipped))
        send(messages, model)  # step 2: head, marker and the stack reach the model


# --- seed 000: 200 order records, the first 20 kept without a marker ---------------

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


@ctxledger.tool(serialize=None)
def query_orders(days: int) -> dict[str, Any]:
    """Seed 000's order query: 200 records of eight fields (``original`` only)."""
    return {"tool": "order.query", "items": [_order(i) for i in range(ORDER_ROWS)]}


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


def seed_000_first_rows(model: str = DEFAULT_MODEL) -> None:
    """A declared head-rows cut with no marker: 180 of 200 orders gone, unbeknown."""
    with ctxledger.run("orders-agent"):
        messages: list[Message] = [
            {"role": "system", "content": "你是订单分析助手，只依据工具返回的订单数据回答。"},
            {
                "role": "user",
                "content": "近 30 天有哪些异常订单？请列出所有带 KEY 标记的关键事实。",
            },
        ]
        send(messages, model)
        messages.append(assistant_calls(tool_call(ORDERS_CALL_ID, "query_orders", {"days": 30})))
        result = query_orders(30, tool_call_id=ORDERS_CALL_ID)
        messages.append(tool_message(ORDERS_CALL_ID, serialize_first_rows(result, ORDERS_CALL_ID)))
        send(messages, model)  # step 2: 20 rows that look like the whole answer


# --- seed 001: three results, an emergency trim, and the naive delete --------------

#: Stand-in for the provider's context window: a longer body is context_length_exceeded.
SRE_CONTEXT_CHARS = 21_000


@ctxledger.tool
def grep_logs(service: str, pattern: str) -> str:
    return "\n".join(
        f"2026-05-20T10:{i // 6:02d}:{i % 6 * 10:02d}Z {service}-7d9f-{i % 3} WARN "
        f"上游调用{pattern}: GET /inventory/sku/SKU-{i * 13 % 97:03d} 耗时 {3000 + i * 17}ms "
        f"(第 {i % 3 + 1}/3 次重试)"
        for i in range(140)
    )


@ctxledger.tool
def query_alerts(service: str) -> dict[str, Any]:
    alerts = [
        {
            "id": f"ALT-{5200 + i}",
            "severity": ("P1", "P2", "P3")[i % 3],
            "title": f"{service} 接口 P99 延迟超过阈值（第 {i + 1} 次触发）",
            "started_at": f"2026-05-20T10:{i * 4:02d}:00Z",
            "labels": {"service": service, "region": "cn-shanghai", "team": "交易中台"},
            "description": "库存服务响应变慢，下单接口超时率上升，已自动通知值班人员。",
        }
        for i in range(14)
    ]
    return {"items": alerts}


@ctxledger.tool
def get_pod_status(service: str) -> dict[str, Any]:
    pods = [
        {
            "id": f"{service}-7d9f-{i}",
            "phase": "Running",
            "restarts": i * 2,
            "cpu": f"{400 + i * 150}m",
            "memory": f"{900 + i * 120}Mi",
            "node": f"node-{i + 11}",
            "last_event": "探针超时后被 kubelet 重启" if i else "运行正常，无异常事件",
        }
        for i in range(30)
    ]
    return {"items": pods}


Trimmer = Callable[[list[Message]], list[Message]]


def emergency_trim(messages: list[Message]) -> list[Message]:
    """Seed 001's EmergencyTrim: oldest result first, content replaced in place by the
    placeholder (ids, names, order kept) until the body is down to half its size."""
    target = body_chars(messages) // 2
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}
    trimmed = [dict(m) for m in messages]
    for message in trimmed:
        if body_chars(trimmed) <= target:
            break
        placeholder = ctxledger.EMERGENCY_TRIM_PLACEHOLDER
        if message.get("role") != "tool" or message.get("content") == placeholder:
            continue
        message["content"] = placeholder
        ctxledger.measure(
            "emergency_trim",
            placeholder,
            tool_call_id=message["tool_call_id"],
            tool_name=names.get(message["tool_call_id"]),
            order=35,  # after the messages were assembled, before the bytes leave
            declared=True,
            strategy="emergency_trim",
        )
    return trimmed


def delete_oldest_result(messages: list[Message]) -> list[Message]:
    """The intuitive trim seed 001 warns against: delete the oldest tool result, keep
    the call that asked for it."""
    oldest = next(i for i, m in enumerate(messages) if m.get("role") == "tool")
    return messages[:oldest] + messages[oldest + 1 :]


def _send_or_trim(messages: list[Message], trim: Trimmer, model: str) -> None:
    """Send; a body over the window is rejected, trimmed for this request only, resent."""
    ctxledger.measure_messages(messages, model=model)
    outgoing = messages
    if body_chars(messages) > SRE_CONTEXT_CHARS:
        outgoing = trim(messages)  # the provider said context_length_exceeded
    ctxledger.measure_request(request_body(outgoing, model), model=model)


def _sre_run(agent_name: str, call_ids: tuple[str, ...], trim: Trimmer, model: str) -> None:
    """Three tool steps of an SRE agent; the fourth request is too long and is trimmed."""
    service = "order-api"
    tools: list[tuple[str, Callable[..., Any], dict[str, Any]]] = [
        ("grep_logs", grep_logs, {"service": service, "pattern": "超时"}),
        ("query_alerts", query_alerts, {"service": service}),
        ("get_pod_status", get_pod_status, {"service": service}),
    ]
    with ctxledger.run(agent_name):
        messages: list[Message] = [
            {"role": "system", "content": "你是 SRE 助手，负责定位故障根因。"},
            {"role": "user", "content": f"{service} 下单接口从 10:00 开始大量超时，帮我查原因。"},
        ]
        for call_id, (name, tool, arguments) in zip(call_ids, tools, strict=True):
            _send_or_trim(messages, trim, model)
            messages.append(assistant_calls(tool_call(call_id, name, arguments)))
            messages.append(tool_message(call_id, tool(**arguments, tool_call_id=call_id)))
        _send_or_trim(messages, trim, model)  # step 4: over the window


def seed_001_emergency_trim(model: str = DEFAULT_MODEL) -> None:
    """The oldest result becomes the placeholder, pairing intact: ``declared``."""
    _sre_run("sre-agent", TRIM_CALL_IDS, emergency_trim, model)


def orphaned_call(model: str = DEFAULT_MODEL) -> None:
    """The oldest result is deleted, its call stays: the request is ``orphaned``."""
    _sre_run("sre-agent-naive", ORPHAN_CALL_IDS, delete_oldest_result, model)


# --- a context manager that drops a whole exchange, call and result ----------------

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


# --- clean journeys: small results, unchanged through all four stages --------------


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
