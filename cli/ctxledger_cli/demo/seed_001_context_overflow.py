"""Seed 001: an SRE agent's fourth request outgrows the context window and the provider
refuses it (``context_length_exceeded``). The emergency trim replaces the oldest result
by its placeholder and retries (``declared``); the naive trim deletes that result and
leaves its call behind, which the provider refuses for good (``orphaned``).

The seed's data and the provider's window; the agent loop is
:mod:`ctxledger_cli.agents.openai_sre` (:mod:`.real_agents` runs it).
"""

from __future__ import annotations

from typing import Any

TRIM_CALL_IDS = ("call_grep_001", "call_alerts_001", "call_pods_001")
#: The same run with the naive trim (deletes the oldest result, keeps its call).
NAIVE_TRIM_CALL_IDS = ("call_grep_naive", "call_alerts_naive", "call_pods_naive")

SERVICE = "order-api"
SYSTEM = "你是 SRE 助手，负责定位故障根因。"
QUESTION = f"{SERVICE} 下单接口从 10:00 开始大量超时，帮我查原因。"
ANSWER = "根因：库存服务响应变慢（P99 超过 3 秒），order-api 的 Pod 因探针超时被反复重启。"

#: The provider's context window (tokens) for gpt-4o: the third request (two results,
#: ~9,500 tokens) fits, the fourth (all three, ~11,500) does not; with the oldest result
#: (the logs, ~7,700) trimmed to its placeholder it fits again.
SRE_CONTEXT_WINDOW = 10_000


def log_lines(service: str, pattern: str) -> str:
    """140 log lines of upstream timeouts: the largest result, and the oldest."""
    return "\n".join(
        f"2026-05-20T10:{i // 6:02d}:{i % 6 * 10:02d}Z {service}-7d9f-{i % 3} WARN "
        f"上游调用{pattern}: GET /inventory/sku/SKU-{i * 13 % 97:03d} 耗时 {3000 + i * 17}ms "
        f"(第 {i % 3 + 1}/3 次重试)"
        for i in range(140)
    )


def alert_records(service: str) -> list[dict[str, Any]]:
    """14 latency alerts of the service."""
    return [
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


def pod_records(service: str) -> list[dict[str, Any]]:
    """30 pods of the service, most restarted after probe timeouts."""
    return [
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
