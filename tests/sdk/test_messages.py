"""Tests for ctxledger.messages: tool calls and results in chat message formats."""

from __future__ import annotations

import ast
import dataclasses
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ctxledger import _message_content as message_content_module
from ctxledger import _messages as messages_module
from ctxledger._messages import (
    ParsedMessages,
    ParsedRequest,
    RequestBodyError,
    ToolCallPart,
    ToolResultPart,
    parse_messages,
    parse_request_body,
)

# --- realistic payloads ----------------------------------------------------------------

CITIES = ["北京", "上海", "广州", "深圳", "杭州"]


def _records(n: int = 50) -> list[dict[str, Any]]:
    """The seed case: a tool returning ``n`` JSON records with Chinese text."""
    return [
        {
            "id": i,
            "客户": f"客户{i:02d}号",
            "城市": CITIES[i % len(CITIES)],
            "备注": "订单已发货，预计三天内送达。" if i % 2 else "等待付款 — 请尽快处理",
            "金额": round(100 + i * 12.5, 2),
        }
        for i in range(n)
    ]


SEED_TEXT = json.dumps(_records(), ensure_ascii=False)
WEATHER_TEXT = '{"city": "上海", "temp_c": 21, "desc": "多云转晴"}'
ASTRAL_TEXT = "生僻字𠮷与表情😀混排"


def _openai_chat_messages() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "你是一个客服助手。"},
        {"role": "user", "content": "查询上海天气，并列出最近的订单。"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_orders",
                    "type": "function",
                    "function": {"name": "list_orders", "arguments": '{"limit": 50}'},
                },
                {
                    "id": "call_weather",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "上海"}'},
                },
                {
                    "id": "call_astral",
                    "type": "function",
                    "function": {"name": "echo", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_orders", "content": SEED_TEXT},
        {"role": "tool", "tool_call_id": "call_weather", "content": WEATHER_TEXT},
        {"role": "tool", "tool_call_id": "call_astral", "content": ASTRAL_TEXT},
    ]


def _anthropic_messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "查询上海天气，并列出最近的订单。"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "我来查询。"},
                {
                    "type": "tool_use",
                    "id": "toolu_01Orders",
                    "name": "list_orders",
                    "input": {"limit": 50},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_02Weather",
                    "name": "get_weather",
                    "input": {"city": "上海"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_03Broken",
                    "name": "flaky_tool",
                    "input": {},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Orders", "content": SEED_TEXT},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02Weather",
                    "content": [
                        {"type": "text", "text": "上海："},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBORw0KGgo=",
                            },
                        },
                        {"type": "text", "text": "多云转晴，21°C"},
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_03Broken",
                    "content": "错误：服务暂时不可用",
                    "is_error": True,
                },
                {"type": "text", "text": "请总结一下。"},
            ],
        },
    ]


def _responses_input() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "查询上海天气，并列出最近的订单。"},
        {
            "type": "function_call",
            "id": "fc_001",
            "call_id": "call_r_orders",
            "name": "list_orders",
            "arguments": '{"limit": 50}',
        },
        {
            "type": "function_call",
            "id": "fc_002",
            "call_id": "call_r_weather",
            "name": "get_weather",
            "arguments": '{"city": "上海"}',
        },
        {"type": "function_call_output", "call_id": "call_r_orders", "output": SEED_TEXT},
        {
            "type": "function_call_output",
            "call_id": "call_r_weather",
            "output": [
                {"type": "input_text", "text": "上海："},
                {"type": "input_image", "image_url": "https://example.com/sky.png"},
                {"type": "input_text", "text": "多云转晴"},
            ],
        },
    ]


# --- OpenAI Chat Completions -------------------------------------------------------------


def test_openai_chat_parallel_calls_and_results() -> None:
    parsed = parse_messages(_openai_chat_messages())

    assert parsed.format == "openai_chat"
    assert parsed.calls == (
        ToolCallPart("call_orders", "list_orders", 2),
        ToolCallPart("call_weather", "get_weather", 2),
        ToolCallPart("call_astral", "echo", 2),
    )
    assert parsed.results == (
        ToolResultPart("call_orders", SEED_TEXT, "list_orders", 3),
        ToolResultPart("call_weather", WEATHER_TEXT, "get_weather", 4),
        ToolResultPart("call_astral", ASTRAL_TEXT, "echo", 5),
    )


def test_openai_chat_seed_case_chinese_text_preserved_exactly() -> None:
    parsed = parse_messages(_openai_chat_messages())
    text = parsed.results[0].text

    assert text == SEED_TEXT
    assert [ord(c) for c in text] == [ord(c) for c in SEED_TEXT]
    assert "\\u" not in text  # not re-escaped
    assert len(json.loads(text)) == 50
    assert json.loads(text)[7]["城市"] == "广州"
    # Astral-plane characters are single code points and survive untouched.
    assert parsed.results[2].text == ASTRAL_TEXT
    assert len(parsed.results[2].text) == 10


def test_openai_chat_list_content_concatenates_text_parts() -> None:
    msgs = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search"}},
                {"id": "c2", "type": "function", "function": {"name": "search"}},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "第一部分"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {"type": "text", "text": "第二部分\n"},
                {"type": "text", "text": "end"},
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": None},
    ]
    parsed = parse_messages(msgs)

    assert parsed.results[0].text == "第一部分第二部分\nend"
    assert parsed.results[1].text == ""
    assert [r.tool_name for r in parsed.results] == ["search", "search"]


def test_openai_chat_missing_content_and_custom_tool_call() -> None:
    msgs = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c_custom", "type": "custom", "custom": {"name": "run_sql", "input": "x"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c_custom"},
    ]
    parsed = parse_messages(msgs)

    assert parsed.calls == (ToolCallPart("c_custom", "run_sql", 0),)
    assert parsed.results == (ToolResultPart("c_custom", "", "run_sql", 1),)


# --- Anthropic Messages ------------------------------------------------------------------


def test_anthropic_parallel_tool_use_and_results() -> None:
    parsed = parse_messages(_anthropic_messages())

    assert parsed.format == "anthropic"
    assert parsed.calls == (
        ToolCallPart("toolu_01Orders", "list_orders", 1),
        ToolCallPart("toolu_02Weather", "get_weather", 1),
        ToolCallPart("toolu_03Broken", "flaky_tool", 1),
    )
    assert parsed.results == (
        ToolResultPart("toolu_01Orders", SEED_TEXT, "list_orders", 2),
        # Text blocks are concatenated with ""; the image contributes nothing.
        ToolResultPart("toolu_02Weather", "上海：多云转晴，21°C", "get_weather", 2),
        # is_error does not change the text.
        ToolResultPart("toolu_03Broken", "错误：服务暂时不可用", "flaky_tool", 2),
    )


def test_anthropic_missing_and_empty_content() -> None:
    msgs = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "noop", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "noop", "input": {}},
                {"type": "tool_use", "id": "t3", "name": "only_image", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": []},
                {
                    "type": "tool_result",
                    "tool_use_id": "t3",
                    "content": [
                        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
                    ],
                },
            ],
        },
    ]
    parsed = parse_messages(msgs)

    assert [(r.tool_call_id, r.text, r.tool_name) for r in parsed.results] == [
        ("t1", "", "noop"),
        ("t2", "", "noop"),
        ("t3", "", "only_image"),
    ]


# --- OpenAI Responses API ----------------------------------------------------------------


def test_openai_responses_function_calls_and_outputs() -> None:
    parsed = parse_messages(_responses_input())

    assert parsed.format == "openai_responses"
    # call_id, not the item id (fc_...), links a call to its output.
    assert parsed.calls == (
        ToolCallPart("call_r_orders", "list_orders", 1),
        ToolCallPart("call_r_weather", "get_weather", 2),
    )
    assert parsed.results == (
        ToolResultPart("call_r_orders", SEED_TEXT, "list_orders", 3),
        ToolResultPart("call_r_weather", "上海：多云转晴", "get_weather", 4),
    )


def test_openai_responses_custom_tool_call_and_none_output() -> None:
    items = [
        {"type": "custom_tool_call", "call_id": "ct1", "name": "apply_patch", "input": "..."},
        {"type": "custom_tool_call_output", "call_id": "ct1", "output": "补丁已应用"},
        {"type": "function_call", "call_id": "fc_none", "name": "ping", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_none", "output": None},
    ]
    parsed = parse_messages(items)

    assert parsed.results == (
        ToolResultPart("ct1", "补丁已应用", "apply_patch", 1),
        ToolResultPart("fc_none", "", "ping", 3),
    )


# --- name resolution, orphans, ordering ----------------------------------------------------


def test_orphaned_call_and_result_without_call() -> None:
    msgs = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_answered", "type": "function", "function": {"name": "lookup"}},
                {"id": "call_orphan", "type": "function", "function": {"name": "never_run"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_answered", "content": "找到了"},
        {"role": "tool", "tool_call_id": "call_stray", "content": "来历不明"},
    ]
    parsed = parse_messages(msgs)

    assert [c.tool_call_id for c in parsed.calls] == ["call_answered", "call_orphan"]
    assert parsed.results == (
        ToolResultPart("call_answered", "找到了", "lookup", 1),
        ToolResultPart("call_stray", "来历不明", None, 2),
    )


def test_name_resolved_from_call_anywhere_in_list_and_first_call_wins() -> None:
    msgs = [
        {"type": "function_call_output", "call_id": "late", "output": "结果在前"},
        {"type": "function_call", "call_id": "late", "name": "defined_later"},
        {"type": "function_call", "call_id": "dup", "name": "first_name"},
        {"type": "function_call", "call_id": "dup", "name": "second_name"},
        {"type": "function_call_output", "call_id": "dup", "output": "x"},
        {"type": "function_call", "call_id": "unnamed"},
        {"type": "function_call", "call_id": "unnamed", "name": "named_later"},
        {"type": "function_call_output", "call_id": "unnamed", "output": "y"},
    ]
    parsed = parse_messages(msgs)

    assert [(r.tool_call_id, r.tool_name) for r in parsed.results] == [
        ("late", "defined_later"),
        ("dup", "first_name"),
        ("unnamed", "named_later"),
    ]
    assert parsed.calls[3] == ToolCallPart("unnamed", None, 5)


def test_mixed_formats_are_all_collected_and_first_format_is_reported() -> None:
    msgs = [*_anthropic_messages(), *_openai_chat_messages(), *_responses_input()]
    parsed = parse_messages(msgs)

    assert parsed.format == "anthropic"
    assert len(parsed.calls) == 3 + 3 + 2
    assert len(parsed.results) == 3 + 3 + 2
    assert [r.message_index for r in parsed.results] == [2, 2, 2, 6, 7, 8, 12, 13]
    assert all(r.tool_name is not None for r in parsed.results)


def test_no_tool_parts_is_unknown_format() -> None:
    parsed = parse_messages(
        [
            {"role": "system", "content": "你好"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": "你好！"},
        ]
    )

    assert parsed == ParsedMessages(format="unknown", results=(), calls=())


def test_generator_and_tuple_inputs() -> None:
    from_generator = parse_messages(m for m in _openai_chat_messages())
    from_tuple = parse_messages(tuple(_openai_chat_messages()))

    assert from_generator == parse_messages(_openai_chat_messages())
    assert from_tuple == from_generator
    assert len(from_generator.results) == 3


# --- non-string contents ------------------------------------------------------------------


def test_non_string_contents_become_json_text() -> None:
    records = _records(3)
    msgs = [
        {"role": "tool", "tool_call_id": "dict", "content": {"城市": "北京", "ok": True}},
        {"role": "tool", "tool_call_id": "records", "content": records},
        {"role": "tool", "tool_call_id": "number", "content": 42},
        {"role": "tool", "tool_call_id": "flag", "content": False},
        {"type": "function_call_output", "call_id": "resp_dict", "output": {"行": [1, 2]}},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "anth", "content": {"a": "甲"}}],
        },
    ]
    texts = {r.tool_call_id: r.text for r in parse_messages(msgs).results}

    assert texts == {
        "dict": '{"城市": "北京", "ok": true}',
        "records": json.dumps(records, ensure_ascii=False),
        "number": "42",
        "flag": "false",
        "resp_dict": '{"行": [1, 2]}',
        "anth": '{"a": "甲"}',
    }


def test_list_of_records_with_type_field_is_not_mistaken_for_content_parts() -> None:
    rows = [{"type": "order", "id": 1}, {"type": "refund", "id": 2}]
    parsed = parse_messages([{"role": "tool", "tool_call_id": "c", "content": rows}])

    assert parsed.results[0].text == json.dumps(rows, ensure_ascii=False)


def test_unserialisable_content_does_not_raise() -> None:
    class Opaque:
        __slots__ = ()

        def __str__(self) -> str:
            return "不透明对象"

    msgs = [
        {"role": "tool", "tool_call_id": "set", "content": {"v": {1}}},
        {"role": "tool", "tool_call_id": "opaque", "content": Opaque()},
        {"role": "tool", "tool_call_id": "tuple_keys", "content": {(1, 2): "x"}},
    ]
    texts = {r.tool_call_id: r.text for r in parse_messages(msgs).results}

    assert texts["set"] == '{"v": "{1}"}'
    assert texts["opaque"] == '"不透明对象"'
    assert texts["tuple_keys"] == "{(1, 2): 'x'}"


# --- objects (pydantic-like) ----------------------------------------------------------------


class FakeModel:
    """Stands in for a pydantic model: only ``model_dump`` is used."""

    def __init__(self, **data: Any) -> None:
        self._data = data
        self.modes: list[str] = []

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        self.modes.append(mode)
        return {
            k: (v.model_dump(mode=mode) if isinstance(v, FakeModel) else v)
            for k, v in self._data.items()
        }


class LegacyDumper:
    """A ``model_dump`` that does not accept ``mode``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def model_dump(self) -> dict[str, Any]:
        return dict(self._data)


class BrokenDumper:
    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("boom")


class PlainBlock:
    """No model_dump: read through attributes."""

    def __init__(self, **attrs: Any) -> None:
        for key, value in attrs.items():
            setattr(self, key, value)


@dataclasses.dataclass(frozen=True)
class SlotBlock:
    __slots__ = ("content", "tool_use_id", "type")
    type: str
    tool_use_id: str
    content: str


def test_pydantic_like_objects_are_dumped_in_python_mode() -> None:
    assistant = FakeModel(
        role="assistant",
        content=None,
        tool_calls=[
            FakeModel(id="call_a", type="function", function=FakeModel(name="list_orders")),
            FakeModel(id="call_b", type="function", function=FakeModel(name="get_weather")),
        ],
    )
    tool_a = FakeModel(role="tool", tool_call_id="call_a", content=SEED_TEXT)
    tool_b = FakeModel(role="tool", tool_call_id="call_b", content=WEATHER_TEXT)
    parsed = parse_messages([assistant, tool_a, tool_b])

    assert assistant.modes == ["python"]
    assert tool_a.modes == ["python"]
    assert parsed.format == "openai_chat"
    assert parsed.results == (
        ToolResultPart("call_a", SEED_TEXT, "list_orders", 1),
        ToolResultPart("call_b", WEATHER_TEXT, "get_weather", 2),
    )


def test_objects_without_mode_argument_plain_attributes_and_slotted_dataclasses() -> None:
    msgs = [
        PlainBlock(
            role="assistant",
            content=[
                PlainBlock(type="tool_use", id="tu_1", name="read_file", input={}),
                PlainBlock(type="tool_use", id="tu_2", name="grep", input={}),
            ],
        ),
        PlainBlock(
            role="user",
            content=[
                SlotBlock(type="tool_result", tool_use_id="tu_1", content="文件内容"),
                PlainBlock(
                    type="tool_result",
                    tool_use_id="tu_2",
                    content=[PlainBlock(type="text", text="第1行"), {"type": "text", "text": "!"}],
                ),
            ],
        ),
        LegacyDumper({"type": "function_call_output", "call_id": "legacy", "output": "旧版"}),
        BrokenDumper(),
    ]
    parsed = parse_messages(msgs)

    assert parsed.format == "anthropic"
    assert parsed.results == (
        ToolResultPart("tu_1", "文件内容", "read_file", 1),
        ToolResultPart("tu_2", "第1行!", "grep", 1),
        ToolResultPart("legacy", "旧版", None, 2),
    )


def test_real_pydantic_models_if_available() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Function(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        name: str
        arguments: str

    class ToolCall(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        id: str
        type: str = "function"
        function: Function

    class Message(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        role: str
        content: str | None = None
        tool_calls: list[ToolCall] | None = None
        tool_call_id: str | None = None

    msgs = [
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="p1", function=Function(name="查询", arguments="{}"))],
        ),
        Message(role="tool", tool_call_id="p1", content=SEED_TEXT),
    ]
    parsed = parse_messages(msgs)

    assert parsed.results == (ToolResultPart("p1", SEED_TEXT, "查询", 1),)


# --- junk is ignored --------------------------------------------------------------------------


class ExplodingMapping(dict[str, Any]):
    def get(self, key: Any, default: Any = None) -> Any:
        raise KeyError(key)


def test_junk_entries_are_skipped_and_indices_still_count_them() -> None:
    msgs: list[Any] = [
        None,
        "just a string",
        42,
        ["a", "list"],
        {},
        {"role": "tool"},  # no tool_call_id
        {"role": "tool", "tool_call_id": 7, "content": "id not a string"},
        {"role": "tool", "tool_call_id": "", "content": "empty id"},
        {"role": "assistant", "tool_calls": "not a list"},
        {"role": "assistant", "tool_calls": {"id": "dict_not_list"}},
        {
            "role": "assistant",
            "tool_calls": [
                None,
                "x",
                {"type": "function", "function": {"name": "no_id"}},
                {"id": "ok_call", "function": "not a dict"},
                {"id": "named", "type": "function", "function": {"name": 123}},
            ],
        },
        {"role": "user", "content": [None, 1, "s", {"type": ["unhashable"]}, {"no": "type"}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "no id"}]},
        {"type": ["unhashable"], "call_id": "x"},
        {"type": "function_call_output", "output": "no call_id"},
        {"type": "function_call"},
        ExplodingMapping(role="tool", tool_call_id="explodes"),
        object(),
        BrokenDumper(),
        FakeModel,  # a class, not an instance
        {"role": "tool", "tool_call_id": "good", "content": "有效"},
    ]
    parsed = parse_messages(msgs)

    assert parsed.calls == (
        ToolCallPart("ok_call", None, 10),
        ToolCallPart("named", None, 10),
    )
    assert parsed.results == (ToolResultPart("good", "有效", None, 20),)
    assert parsed.format == "openai_chat"


@pytest.mark.parametrize("bad", [None, 5, "messages", b"bytes", {"role": "tool"}, 3.5])
def test_non_iterable_or_scalar_argument_yields_nothing(bad: Any) -> None:
    assert parse_messages(bad) == ParsedMessages(format="unknown", results=(), calls=())


def test_junk_inside_content_lists_contributes_nothing() -> None:
    msgs = [
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": [
                {"type": "text", "text": "甲"},
                None,
                "stray string",
                {"type": "text"},
                {"type": "text", "text": 99},
                {"type": "text", "text": "乙"},
            ],
        }
    ]

    assert parse_messages(msgs).results[0].text == "甲乙"


# --- parse_request_body ------------------------------------------------------------------------


def _chat_body() -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": _openai_chat_messages(),
        "tools": [{"type": "function", "function": {"name": "list_orders"}}],
    }


def test_request_body_as_str_bytes_bytearray_and_dict_agree() -> None:
    body = _chat_body()
    as_str = json.dumps(body, ensure_ascii=False)
    as_escaped_str = json.dumps(body)  # \uXXXX escapes decode to the same text
    results = [
        parse_request_body(body),
        parse_request_body(as_str),
        parse_request_body(as_escaped_str),
        parse_request_body(as_str.encode("utf-8")),
        parse_request_body(bytearray(as_str.encode("utf-8"))),
    ]

    for parsed in results:
        assert isinstance(parsed, ParsedRequest)
        assert parsed.model == "gpt-4o-mini"
        assert parsed.messages.format == "openai_chat"
        assert parsed.messages == results[0].messages
    assert results[3].messages.results[0].text == SEED_TEXT
    assert results[3].messages.results[0].tool_name == "list_orders"


def test_request_body_anthropic() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "你是一个客服助手。",
        "messages": _anthropic_messages(),
    }
    parsed = parse_request_body(json.dumps(body, ensure_ascii=False).encode())

    assert parsed.model == "claude-sonnet-4-5"
    assert parsed.messages.format == "anthropic"
    assert [r.text for r in parsed.messages.results] == [
        SEED_TEXT,
        "上海：多云转晴，21°C",
        "错误：服务暂时不可用",
    ]


def test_request_body_responses_input_list_and_string() -> None:
    listed = parse_request_body({"model": "gpt-4.1", "input": _responses_input()})
    plain = parse_request_body('{"model": "gpt-4.1", "input": "你好"}')

    assert listed.messages.format == "openai_responses"
    assert [r.tool_name for r in listed.messages.results] == ["list_orders", "get_weather"]
    assert plain == ParsedRequest(
        messages=ParsedMessages(format="openai_responses", results=(), calls=()),
        model="gpt-4.1",
    )


def test_request_body_prefers_messages_over_input_and_tolerates_odd_fields() -> None:
    both = parse_request_body({"messages": _openai_chat_messages(), "input": _responses_input()})
    no_messages = parse_request_body({"model": 5, "messages": "nope"})
    empty = parse_request_body("{}")

    assert both.messages.format == "openai_chat"
    assert len(both.messages.results) == 3
    assert no_messages == ParsedRequest(ParsedMessages("unknown", (), ()), None)
    assert empty == ParsedRequest(ParsedMessages("unknown", (), ()), None)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("", "not valid JSON"),
        ("{not json", "not valid JSON"),
        ('{"model": "x",}', "not valid JSON"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        ("[]", "got array"),
        ('[{"model": "x"}]', "got array"),
        ("null", "got null"),
        ("42", "got number"),
        ('"a string"', "got string"),
        ("true", "got boolean"),
        (b"[1, 2]", "got array"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_invalid_bodies_raise_request_body_error(body: Any, fragment: str) -> None:
    with pytest.raises(RequestBodyError, match=fragment):
        parse_request_body(body)


@pytest.mark.parametrize("body", [None, 42, [{"messages": []}]])
def test_wrong_python_types_raise_request_body_error(body: Any) -> None:
    with pytest.raises(RequestBodyError, match="must be str, bytes or a mapping"):
        parse_request_body(body)


def test_request_body_error_is_a_value_error() -> None:
    assert issubclass(RequestBodyError, ValueError)
    with pytest.raises(ValueError):
        parse_request_body("not json")


# --- module contract ----------------------------------------------------------------------------


def test_results_are_frozen() -> None:
    part = parse_messages(_openai_chat_messages()).results[0]

    with pytest.raises(dataclasses.FrozenInstanceError):
        part.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("module", [messages_module, message_content_module])
def test_module_is_pure(module: ModuleType) -> None:
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)

    allowed = {"__future__", "ctxledger.semconv", "ctxledger._message_content"}
    offenders = {
        name
        for name in imported
        if name not in allowed and name.split(".")[0] not in sys.stdlib_module_names
    }
    assert offenders == set()
    assert "dataclasses" in imported  # sanity: the walk does find imports
