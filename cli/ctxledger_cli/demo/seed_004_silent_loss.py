"""Seed 004: 50 retrieved snippets, a context manager that keeps 16,000 characters, and
a model that sees 20 — a silent loss. Then a small lookup that arrives intact. The data;
the agent loop and its context manager are :mod:`ctxledger_cli.agents.anthropic_kb`
(:mod:`.real_agents` runs it)."""

from __future__ import annotations

from typing import Any

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
