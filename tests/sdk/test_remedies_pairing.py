"""The pairing checker catches seed 001's naive trim — deleting a tool result — in every
format, and passes a list whose results were only replaced by the placeholder."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger.remedies.pairing import PairingProblem, assert_paired, check_pairing


def openai_chat() -> list[dict[str, Any]]:
    def call(cid: str, name: str) -> dict[str, Any]:
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}

    return [
        {"role": "system", "content": "你是 SRE 助手。"},
        {"role": "user", "content": "order-api 超时了，查一下。"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_grep", "grep_logs")]},
        {"role": "tool", "tool_call_id": "call_grep", "content": "WARN timeout\n" * 200},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_alerts", "query_alerts"), call("call_pods", "get_pods")],
        },
        {"role": "tool", "tool_call_id": "call_alerts", "content": '{"items": []}'},
        {"role": "tool", "tool_call_id": "call_pods", "content": '{"items": []}'},
        {"role": "assistant", "content": "库存服务变慢。"},
    ]


def anthropic() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "order-api 超时了，查一下。"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "先看日志和告警。"},
                {"type": "tool_use", "id": "toolu_grep", "name": "grep_logs", "input": {}},
                {"type": "tool_use", "id": "toolu_alerts", "name": "query_alerts", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_grep",
                    "content": [{"type": "text", "text": "WARN timeout\n" * 200}],
                },
                {"type": "tool_result", "tool_use_id": "toolu_alerts", "content": "[]"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "库存服务变慢。"}]},
    ]


def responses() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "order-api 超时了，查一下。"},
        {"type": "function_call", "call_id": "fc_grep", "name": "grep_logs", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_grep", "output": "WARN timeout\n" * 200},
    ]


FORMATS = {"openai_chat": openai_chat, "anthropic": anthropic, "responses": responses}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_well_formed_list_has_no_problem(fmt: str):
    assert check_pairing(FORMATS[fmt]()) == []
    assert_paired(FORMATS[fmt]())


def test_deleting_the_oldest_openai_result_orphans_its_call():
    messages = openai_chat()
    del messages[3]  # seed 001's intuitive trim
    assert check_pairing(messages) == [
        PairingProblem("call_without_result", "call_grep", 2, "grep_logs")
    ]
    with pytest.raises(AssertionError) as raised:
        assert_paired(messages)
    text = str(raised.value)
    assert "call_grep" in text and "grep_logs" in text and "message 2" in text
    assert "no result" in text


def test_deleting_an_anthropic_tool_result_block_orphans_its_call():
    messages = anthropic()
    messages[2]["content"] = messages[2]["content"][1:]
    assert check_pairing(messages) == [
        PairingProblem("call_without_result", "toolu_grep", 1, "grep_logs")
    ]
    with pytest.raises(AssertionError, match="toolu_grep"):
        assert_paired(messages)


def test_deleting_a_responses_output_orphans_its_call():
    items = responses()[:2]
    assert [p.kind for p in check_pairing(items)] == ["call_without_result"]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_replacing_the_content_by_the_placeholder_keeps_pairing(fmt: str):
    messages = FORMATS[fmt]()
    last = messages[-1] if fmt == "responses" else None
    if fmt == "openai_chat":
        messages[3] = {**messages[3], "content": EMERGENCY_TRIM_PLACEHOLDER}
    elif fmt == "anthropic":
        blocks = messages[2]["content"]
        messages[2] = {
            **messages[2],
            "content": [{**blocks[0], "content": EMERGENCY_TRIM_PLACEHOLDER}, blocks[1]],
        }
    else:
        assert last is not None
        messages[-1] = {**last, "output": EMERGENCY_TRIM_PLACEHOLDER}
    assert_paired(messages)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_deleting_the_call_leaves_a_result_without_call(fmt: str):
    messages = FORMATS[fmt]()
    if fmt == "anthropic":
        messages[1]["content"] = [b for b in messages[1]["content"] if b.get("id") != "toolu_grep"]
        expected = [PairingProblem("result_without_call", "toolu_grep", 2)]
    elif fmt == "openai_chat":
        del messages[2]
        expected = [PairingProblem("result_without_call", "call_grep", 2)]
    else:
        del messages[1]
        expected = [PairingProblem("result_without_call", "fc_grep", 1)]
    assert check_pairing(messages) == expected
    with pytest.raises(AssertionError, match="answers no earlier tool call"):
        assert_paired(messages)


def test_a_result_before_its_call_pairs_with_nothing():
    messages = openai_chat()
    messages[2], messages[3] = messages[3], messages[2]  # result first, then the call
    kinds = sorted((p.kind, p.tool_call_id, p.message_index) for p in check_pairing(messages))
    assert kinds == [
        ("call_without_result", "call_grep", 3),
        ("result_without_call", "call_grep", 2),
    ]


def test_ids_are_matched_as_a_multiset():
    messages = openai_chat()
    duplicate = {**messages[2], "tool_calls": [dict(messages[2]["tool_calls"][0])]}
    messages.insert(4, duplicate)  # the same id called again, answered once
    assert check_pairing(messages) == [
        PairingProblem("call_without_result", "call_grep", 4, "grep_logs")
    ]
    messages.insert(5, {"role": "tool", "tool_call_id": "call_grep", "content": "again"})
    assert check_pairing(messages) == []
    messages.append({"role": "tool", "tool_call_id": "call_grep", "content": "a third time"})
    assert [(p.kind, p.message_index) for p in check_pairing(messages)] == [
        ("result_without_call", len(messages) - 1)
    ]


def test_every_problem_is_listed_in_message_order():
    messages = openai_chat()
    del messages[6]  # call_pods' result
    del messages[3]  # call_grep's result
    problems = check_pairing(messages)
    assert [(p.tool_call_id, p.message_index) for p in problems] == [
        ("call_grep", 2),
        ("call_pods", 3),
    ]
    with pytest.raises(AssertionError) as raised:
        assert_paired(messages)
    assert str(raised.value).startswith("2 unpaired")
    assert str(raised.value).index("call_grep") < str(raised.value).index("call_pods")


def test_problems_are_frozen():
    problem = PairingProblem("call_without_result", "call_x", 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.tool_call_id = "call_y"  # type: ignore[misc]
