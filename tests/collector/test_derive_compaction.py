"""How a request declares the compaction before it: the GenAI conventions'
``gen_ai.conversation.compacted`` and ``compaction`` message part, Anthropic's
``compaction`` block and Claude Code's summary, each keyed so that the requests after one
compaction share a key and the next compaction gets another; then judged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import judge_trace
from ctxledger_collector.derive.anthropic_body import read_request_body
from ctxledger_collector.derive.compaction import CLAUDE_CODE_SUMMARY_OPENING
from tests.collector.test_derive import CALL, OPENING, RESULT, chat, derive_all

SUMMARY = (
    f"{CLAUDE_CODE_SUMMARY_OPENING} The summary below covers the earlier portion: 查询了订单。"
)


def _compaction(messages: list[dict[str, Any]], **attributes: Any) -> str | None:
    _, manifests, _ = derive_all([chat("1", messages, start=1, **attributes)])
    return manifests[0].compaction


@pytest.mark.parametrize(("flag", "declared"), [(True, True), ("true", True), (False, False)])
def test_the_spans_flag_declares_a_compaction(flag: object, declared: bool) -> None:
    found = _compaction(OPENING, **{sc.GEN_AI_CONVERSATION_COMPACTED: flag})
    assert found == (sc.GEN_AI_CONVERSATION_COMPACTED if declared else None)


def test_a_compaction_part_is_keyed_by_what_it_holds() -> None:
    def part(summary: str) -> list[dict[str, Any]]:
        return [{"role": "user", "parts": [{"type": "compaction", "content": summary}]}]

    first, again, other = (_compaction(part(s)) for s in ("订单 1-50", "订单 1-50", "订单 51-99"))
    assert first is not None and first.startswith("compaction:")
    assert first == again != other
    assert _compaction(OPENING) is None


def _anthropic(*first_blocks: dict[str, Any]) -> str | None:
    answer = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    body = {"model": "claude-sonnet-4-6",
            "messages": [{"role": "user", "content": list(first_blocks)}, answer]}  # fmt: skip
    exchange = read_request_body(json.dumps(body, ensure_ascii=False), None)
    assert exchange.input is not None
    return exchange.input[0].compaction


def test_claude_codes_summary_and_anthropics_compaction_block_declare_one() -> None:
    reminder = {
        "type": "text",
        "text": "<system-reminder>Today's date is 2026-12-06.</system-reminder>",
    }
    summary = _anthropic(reminder, {"type": "text", "text": SUMMARY})
    assert summary is not None and summary.startswith("claude_code.summary:")
    assert summary == _anthropic({"type": "text", "text": SUMMARY})
    assert summary != _anthropic({"type": "text", "text": SUMMARY + " 更多。"})
    block = _anthropic({"type": "compaction", "content": "opaque"})
    assert block is not None and block.startswith("compaction:")
    assert _anthropic(reminder, {"type": "text", "text": "Run the tools."}) is None


@pytest.mark.parametrize(
    ("declaring", "verdict"),
    [
        ({sc.GEN_AI_CONVERSATION_COMPACTED: True}, sc.VERDICT_UNMARKED),
        ({"part": True}, sc.VERDICT_DECLARED),
    ],
    ids=["flag", "part"],
)
def test_a_genai_request_after_a_compaction_declares_the_results_it_replaced(
    declaring: dict[str, Any], verdict: str
) -> None:
    opening = OPENING
    attributes = {k: v for k, v in declaring.items() if k != "part"}
    if "part" in declaring:
        opening = [{"role": "user", "parts": [{"type": "compaction", "content": "s c1"}]}]
    later = [*opening, {"role": "user", "parts": [{"type": "text", "content": "more?"}]}]
    spans = [
        chat("1", [*OPENING, CALL, RESULT], start=1, **{sc.GEN_AI_CONVERSATION_ID: "conv"}),
        chat("2", later, start=2, **{sc.GEN_AI_CONVERSATION_ID: "conv"}, **attributes),
    ]
    measurements, manifests, _ = derive_all(spans)
    reports = {r.request_id: r for r in judge_trace(measurements, manifests) if r.request_id}
    assert reports["1" * 16].verdict == sc.VERDICT_INTACT
    assert reports["2" * 16].verdict == verdict
    assert reports["2" * 16].stages[-1].stage == sc.STAGE_COMPACTED
