"""Scripted agents that reproduce the seeds' incidents. No LLM and no network needed.

Seed 004 lives here: 50 retrieved snippets, a context manager that keeps 16,000
characters, and a model that sees 20. The other incidents are in
:mod:`ctxledger.demo_incidents`; :func:`run_all_incidents` runs them all, each in its
own trace, and :data:`EXPECTED_VERDICTS` says what the rules must find.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import ctxledger
from ctxledger._ledger import Ledger
from ctxledger.demo_incidents import (
    CLEAN_CALL_IDS,
    DEFAULT_MODEL,
    DROP_CALL_IDS,
    LOG_CALL_ID,
    ORDERS_CALL_ID,
    ORPHAN_CALL_IDS,
    TRIM_CALL_IDS,
    assistant_calls,
    clean_journeys,
    dropped_result,
    orphaned_call,
    seed_000_first_rows,
    seed_001_emergency_trim,
    seed_002_log_clip,
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


@ctxledger.tool
def search_knowledge(query: str) -> dict[str, Any]:
    """The retrieval tool: 50 snippets, every one of them present at the source."""
    return {"query": query, "results": [_snippet(i) for i in range(50)]}


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


#: Incident name -> (the tool call id that carries the incident, the verdict the rules
#: must give it). A call travels in several requests, one journey each; the verdict is
#: the worst of its journeys. Every other journey of an incident is ``intact``. Call ids
#: are unique across incidents: look each one up in ``/api/v1/reports`` by its id.
EXPECTED_VERDICTS: dict[str, tuple[str, str]] = {
    "seed_004_silent_loss": (SEARCH_CALL_ID, "silent"),
    "seed_002_log_clip": (LOG_CALL_ID, "declared"),
    "seed_000_first_rows": (ORDERS_CALL_ID, "unmarked"),
    "seed_001_emergency_trim": (TRIM_CALL_IDS[0], "declared"),
    "orphaned_call": (ORPHAN_CALL_IDS[0], "orphaned"),
    "dropped_result": (DROP_CALL_IDS[0], "dropped"),
    "clean_journeys": (CLEAN_CALL_IDS[0], "intact"),
}

#: Incident name -> every tool call id the incident issues (its run's journeys).
INCIDENT_CALL_IDS: dict[str, tuple[str, ...]] = {
    "seed_004_silent_loss": (SEARCH_CALL_ID, LOOKUP_CALL_ID),
    "seed_002_log_clip": (LOG_CALL_ID,),
    "seed_000_first_rows": (ORDERS_CALL_ID,),
    "seed_001_emergency_trim": TRIM_CALL_IDS,
    "orphaned_call": ORPHAN_CALL_IDS,
    "dropped_result": DROP_CALL_IDS,
    "clean_journeys": CLEAN_CALL_IDS,
}

#: Incident name -> the function that runs it as one agent run (one trace).
INCIDENTS: dict[str, Callable[[str], None]] = {
    "seed_004_silent_loss": run_seed_004,
    "seed_002_log_clip": seed_002_log_clip,
    "seed_000_first_rows": seed_000_first_rows,
    "seed_001_emergency_trim": seed_001_emergency_trim,
    "orphaned_call": orphaned_call,
    "dropped_result": dropped_result,
    "clean_journeys": clean_journeys,
}


def run_all_incidents(model: str = DEFAULT_MODEL) -> dict[str, str]:
    """Run every incident, each in its own trace; return incident name -> the verdict
    the rules must give its tool call (see :data:`EXPECTED_VERDICTS`)."""
    for incident in INCIDENTS.values():
        incident(model)
    return {name: verdict for name, (_, verdict) in EXPECTED_VERDICTS.items()}


def summary(ledger: Ledger | None) -> str:
    if ledger is None:
        return ""
    losses = [r for r in ledger.reports if r.verdict != "intact"]
    lines = [f"\n{len(losses)} loss(es) found by the local ledger:"]
    lines += [
        f"  {r.verdict:<9} {r.tool_name}[{r.tool_call_id}] lost {r.lost_items} items"
        for r in losses
    ]
    return "\n".join(lines)
