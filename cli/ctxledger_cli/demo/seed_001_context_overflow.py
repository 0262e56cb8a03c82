"""Seed 001: an SRE agent's fourth request outgrows the context window. The emergency
trim replaces the oldest result by its placeholder (``declared``); the naive trim deletes
it and leaves its call behind (``orphaned``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ctxledger
from ctxledger import semconv
from ctxledger.verdicts import STAGE_EMERGENCY_TRIM_ORDER
from ctxledger_cli.demo.agent_loop import (
    DEFAULT_MODEL,
    Message,
    assistant_calls,
    body_chars,
    request_body,
    tool_call,
    tool_message,
)

TRIM_CALL_IDS = ("call_grep_001", "call_alerts_001", "call_pods_001")
ORPHAN_CALL_IDS = ("call_grep_orphan", "call_alerts_orphan", "call_pods_orphan")

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
            semconv.STAGE_EMERGENCY_TRIM,
            placeholder,
            tool_call_id=message["tool_call_id"],
            tool_name=names.get(message["tool_call_id"]),
            order=STAGE_EMERGENCY_TRIM_ORDER,  # after assembling, before the bytes leave
            declared=True,
            strategy=semconv.STAGE_EMERGENCY_TRIM,
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
