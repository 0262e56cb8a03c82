"""The stand-in's model-server discards, through the real ``openai`` and ``anthropic``
clients and httpx for ollama's and llama.cpp's native shapes: ollama's front discard over
``num_ctx``, llama.cpp's token truncation, the Responses API's ``truncation: "auto"``,
Anthropic's context editing, and counting like another tokenizer (``count_scale``,
``count_encoding``).

Every count is recomputed here with tiktoken itself (tests/tiktoken_reference.py) by the
rule the stand-in documents (3 tokens per message, 3 for the reply, every text the model
reads), so "truthful" means: what the answer reports is the reference count of what the
stand-in kept, scaled."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import anthropic
import httpx
import openai
import pytest

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_cli.provider.context_editing import PLACEHOLDER
from tests.tiktoken_reference import reference_count

from .helpers import provider_process

pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]

GPT = "gpt-4o"
GPT_ENCODING = "o200k_base" if importlib.util.find_spec("bpe_openai") else "cl100k_base"
CLAUDE = "claude-sonnet-4-5"
OLLAMA_MODEL = "qwen2.5:7b"  # unknown to tiktoken: counted with cl100k_base
BETA = "context-management-2025-06-27"
ORDERS = json.dumps(
    [{"order_id": f"O-{i}", "status": "已退款" if i % 3 == 0 else "已发货"} for i in range(40)],
    ensure_ascii=False,
)
LOGS = "\n".join(f"2025-01-0{i % 9 + 1} ERROR worker-{i} timeout after 30s" for i in range(60))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def texts_tokens(texts: list[str], encoding: str) -> int:
    return sum(reference_count(text, encoding) for text in texts if text)


def chat_message_tokens(message: dict[str, Any], encoding: str) -> int:
    """OpenAI chat and ollama messages (ollama's arguments are an object)."""
    texts = [message["role"], message.get("content") or "", message.get("tool_call_id", "")]
    texts.append(message.get("tool_name", ""))
    for call in message.get("tool_calls") or ():
        arguments = call["function"]["arguments"]
        texts += [call.get("id", ""), call["function"]["name"]]
        texts.append(arguments if isinstance(arguments, str) else compact(arguments))
    return 3 + texts_tokens(texts, encoding)


def chat_tokens(messages: list[dict[str, Any]], encoding: str) -> int:
    return 3 + sum(chat_message_tokens(m, encoding) for m in messages)


def anthropic_tokens(messages: list[dict[str, Any]]) -> int:
    total = 3
    for message in messages:
        texts = [message["role"]]
        content = message["content"]
        for block in [{"text": content}] if isinstance(content, str) else content:
            texts += [block.get("text", ""), block.get("id", ""), block.get("name", "")]
            texts += [block.get("tool_use_id", ""), block.get("content", "")]
            if "input" in block:
                texts.append(compact(block["input"]))
        total += 3 + texts_tokens(texts, "cl100k_base")
    return total


def ollama_history() -> list[dict[str, Any]]:
    """Two turns of two parallel tool calls each, in ollama's native shape."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You answer from the logs."}]
    for turn in range(2):
        history.append({"role": "user", "content": f"第 {turn} 轮: what failed?"})
        calls = [
            {"function": {"name": "search_logs", "arguments": {"service": f"s-{turn}-{n}"}}}
            for n in range(2)
        ]
        history.append({"role": "assistant", "content": "", "tool_calls": calls})
        history += [
            {"role": "tool", "tool_name": "search_logs", "content": f"{n}: {LOGS}"}
            for n in range(2)
        ]
    history.append({"role": "user", "content": "最后的问题"})
    return history


def kept_after_front_discard(history: list[dict[str, Any]], dropped: int) -> list[dict[str, Any]]:
    return [history[0], *history[1 + dropped :]]


@pytest.mark.parametrize("scale", [1.0, 1.2], ids=["own-count", "scale-1.2"])
def test_ollama_api_chat_drops_the_oldest_messages_over_num_ctx(
    provider_factory: Any, scale: float
) -> None:
    history = ollama_history()
    full = chat_tokens(history, "cl100k_base")
    num_ctx = round(full * scale * 0.6)
    provider = provider_factory(
        script=[ToolCall("search_logs", {"service": "s-9"}, id="call_9")], count_scale=scale
    )
    answer = httpx.post(
        f"{provider.ollama_url}/api/chat",
        json={
            "model": OLLAMA_MODEL,
            "messages": history,
            "options": {"num_ctx": num_ctx},
            "stream": False,
        },
        timeout=30,
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["done"] is True and body["done_reason"] == "stop"
    assert body["message"]["tool_calls"] == [
        {
            "id": "call_9",
            "function": {"index": 0, "name": "search_logs", "arguments": {"service": "s-9"}},
        }
    ]
    (discard,) = provider.discards
    assert discard.api == "ollama" and discard.policy == "front_discard"
    assert not discard.declared and discard.dropped_messages > 0
    assert discard.dropped_indices == tuple(range(1, 1 + discard.dropped_messages))
    kept = kept_after_front_discard(history, discard.dropped_messages)
    assert body["prompt_eval_count"] == round(chat_tokens(kept, "cl100k_base") * scale)
    assert body["prompt_eval_count"] == discard.prompt_tokens_kept <= num_ctx
    assert discard.prompt_tokens_received == round(full * scale)
    # only as many as needed: one message fewer dropped would not have fitted
    one_fewer = kept_after_front_discard(history, discard.dropped_messages - 1)
    assert round(chat_tokens(one_fewer, "cl100k_base") * scale) > num_ctx
    assert body["eval_count"] == round(
        texts_tokens(["search_logs", compact({"service": "s-9"})], "cl100k_base") * scale
    )


def test_ollama_api_chat_streams_ndjson_and_fits_without_discard(provider: ProviderStandIn) -> None:
    provider.script("第一段文字很长很长很长很长, and then some more text")
    history = [{"role": "user", "content": "hello"}]
    with httpx.stream(
        "POST",
        f"{provider.ollama_url}/api/chat",
        json={"model": OLLAMA_MODEL, "messages": history},
        timeout=30,
    ) as answer:
        assert answer.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in answer.iter_lines() if line]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    text = "".join(line["message"]["content"] for line in lines)
    assert text == "第一段文字很长很长很长很长, and then some more text"
    assert lines[-1]["prompt_eval_count"] == chat_tokens(history, "cl100k_base")
    assert provider.discards == []


OLLAMA_TOO_LONG = {"error": "the input length exceeds the context length"}


def test_ollama_api_chat_truncate_false_refuses_instead_of_discarding(
    provider_factory: Any,
) -> None:
    history = ollama_history()
    num_ctx = round(chat_tokens(history, "cl100k_base") * 0.6)
    provider = provider_factory(script=["kept, then cut", "fits"])

    def ask(messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
        body = {"model": OLLAMA_MODEL, "messages": messages, "options": {"num_ctx": num_ctx}}
        return httpx.post(f"{provider.ollama_url}/api/chat", json={**body, **extra}, timeout=30)

    for stream in (False, True):  # refused before any stream starts
        refused = ask(history, truncate=False, stream=stream)
        assert refused.status_code == 400
        assert refused.headers["content-type"] == "application/json"
        assert refused.json() == OLLAMA_TOO_LONG
    assert provider.discards == []
    # truncate true (as when absent) keeps the front discard; the refusals took no step
    cut = ask(history, truncate=True, stream=False)
    assert cut.status_code == 200 and cut.json()["message"]["content"] == "kept, then cut"
    (discard,) = provider.discards
    assert discard.api == "ollama" and discard.dropped_messages > 0
    assert cut.json()["prompt_eval_count"] == discard.prompt_tokens_kept <= num_ctx
    # a prompt within num_ctx is answered whatever truncate says
    short = [history[0], history[-1]]
    fits = ask(short, truncate=False, stream=False)
    assert fits.status_code == 200 and fits.json()["message"]["content"] == "fits"
    assert fits.json()["prompt_eval_count"] == chat_tokens(short, "cl100k_base")
    assert len(provider.discards) == 1


def llama_truncated(n_prompt: int, n_ctx: int, n_keep: int) -> int:
    """llama.cpp's arithmetic, written out again: the tokens it keeps."""
    n_keep = min(n_ctx - 4, n_keep)
    block = (n_ctx - n_keep) // 2
    erased = (n_prompt - n_keep - block) // block
    return n_prompt - erased * block


def test_llama_cpp_completion_keeps_n_keep_and_the_tail(provider_factory: Any) -> None:
    prompt = "System: you read logs.\n" + LOGS * 3
    own = reference_count(prompt, "cl100k_base")
    provider = provider_factory(context_window=own // 3, script=["timeout", "ok"])
    answer = httpx.post(
        f"{provider.url}/completion", json={"prompt": prompt, "n_keep": 12}, timeout=30
    ).json()
    assert answer["truncated"] is True and answer["stop"] is True
    assert answer["content"] == "timeout"
    assert answer["generation_settings"]["n_ctx"] == own // 3
    assert answer["tokens_evaluated"] == llama_truncated(own, own // 3, 12) <= own // 3
    (discard,) = provider.discards
    assert (discard.api, discard.policy, discard.declared) == ("completion", "token_truncate", True)
    assert discard.keep_tokens == 12 and discard.prompt_tokens_received == own
    short = httpx.post(f"{provider.url}/completion", json={"prompt": "hi"}, timeout=30).json()
    assert short["truncated"] is False
    assert short["tokens_evaluated"] == reference_count("hi", "cl100k_base")


def test_chat_completions_token_truncation_like_llama_server(provider_factory: Any) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer from the logs."},
        {"role": "user", "content": "what failed?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": "search_logs", "arguments": compact({"n": n})},
                }
                for n in range(2)
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": LOGS},
        {"role": "tool", "tool_call_id": "call_1", "content": LOGS},
        {"role": "user", "content": "and so?"},
    ]
    own = chat_tokens(history, GPT_ENCODING)
    window = own * 2 // 3
    provider = provider_factory(context_window=window, token_truncate=True, n_keep=16)
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    completion = client.chat.completions.create(model=GPT, messages=history)  # type: ignore[arg-type]
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == llama_truncated(own, window, 16) <= window
    (discard,) = provider.discards
    assert discard.policy == "token_truncate" and not discard.declared
    assert discard.keep_tokens == 16
    # the erased span starts 16 tokens in (messages first, in order): the messages wholly
    # inside it are dropped (the first result among them), those it runs through are cut
    starts = [0]
    for message in history:
        starts.append(starts[-1] + chat_message_tokens(message, GPT_ENCODING))
    span = (16, 16 + own - completion.usage.prompt_tokens)
    inside = [i for i in range(len(history)) if span[0] <= starts[i] and starts[i + 1] <= span[1]]
    touched = [i for i in range(len(history)) if starts[i] < span[1] and starts[i + 1] > span[0]]
    assert discard.dropped_indices == tuple(inside) and 3 in inside
    assert discard.cut_indices == tuple(i for i in touched if i not in inside)
    assert discard.cut_indices  # the erased blocks do not end on a message boundary here
    # the request's own n_keep wins, as llama-server reads it from the body
    again = client.chat.completions.create(
        model=GPT,
        messages=history,
        extra_body={"n_keep": 0},  # type: ignore[arg-type]
    )
    assert again.usage is not None
    assert again.usage.prompt_tokens == llama_truncated(own, window, 0)


def llama_refusal(n_prompt_tokens: int, n_ctx: int) -> dict[str, Any]:
    """llama.cpp's body, written out again from its server's source."""
    message = (
        f"request ({n_prompt_tokens} tokens) exceeds the available context size "
        f"({n_ctx} tokens), try increasing it"
    )
    error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
    return {"error": {**error, "n_prompt_tokens": n_prompt_tokens, "n_ctx": n_ctx}}


@pytest.mark.parametrize("scale", [1.0, 1.2], ids=["own-count", "scale-1.2"])
def test_llama_cpp_completion_refuses_over_window(provider_factory: Any, scale: float) -> None:
    prompt = "System: you read logs.\n" + LOGS * 3
    own = reference_count(prompt, "cl100k_base")
    n_ctx = round(own * scale) // 3
    provider = provider_factory(
        context_window=n_ctx, refuse_over_window=True, count_scale=scale, script=["short"]
    )
    refused = httpx.post(
        f"{provider.url}/completion", json={"prompt": prompt, "n_keep": 12}, timeout=30
    )
    assert refused.status_code == 400
    assert refused.json() == llama_refusal(round(own * scale), n_ctx)
    assert provider.discards == []  # nothing cut: refused whole
    answer = httpx.post(f"{provider.url}/completion", json={"prompt": "hi"}, timeout=30).json()
    assert answer["content"] == "short" and answer["truncated"] is False
    # a prompt exactly filling the window is refused too, as llama.cpp refuses it (">=")
    full = round(own * scale)
    exact = provider_factory(context_window=full, refuse_over_window=True, count_scale=scale)
    at_window = httpx.post(f"{exact.url}/completion", json={"prompt": prompt}, timeout=30)
    assert at_window.status_code == 400 and at_window.json() == llama_refusal(full, full)
    roomy = provider_factory(context_window=full + 1, refuse_over_window=True, count_scale=scale)
    fits = httpx.post(f"{roomy.url}/completion", json={"prompt": prompt}, timeout=30).json()
    assert fits["truncated"] is False and fits["tokens_evaluated"] == full


def test_chat_completions_refuse_over_window_like_llama_server(provider_factory: Any) -> None:
    history = [
        {"role": "system", "content": "You answer from the logs."},
        {"role": "user", "content": f"what failed? {LOGS}"},
    ]
    own = chat_tokens(history, GPT_ENCODING)
    provider = provider_factory(context_window=own // 2, refuse_over_window=True, script=["ok"])
    raw = httpx.post(
        f"{provider.openai_base_url}/chat/completions",
        json={"model": GPT, "messages": history},
        timeout=30,
    )
    assert raw.status_code == 400 and raw.json() == llama_refusal(own, own // 2)
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    for stream in (False, True):  # refused before the stream, as llama-server does
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model=GPT, messages=history, stream=stream)  # type: ignore[call-overload]
        assert refused.value.status_code == 400
        assert refused.value.body == llama_refusal(own, own // 2)["error"]
        assert "exceeds the available context size" in refused.value.message
    assert provider.discards == []
    short = [history[0], {"role": "user", "content": "and so?"}]
    completion = client.chat.completions.create(model=GPT, messages=short)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == "ok"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == chat_tokens(short, GPT_ENCODING)


def test_the_over_window_policies_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="token_truncate and refuse_over_window"):
        ProviderStandIn(token_truncate=True, refuse_over_window=True)
    with pytest.raises(ValueError, match="silent_front_discard and stop_at_limit"):
        ProviderStandIn(silent_front_discard=True, stop_at_limit=True)


def responses_items() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "developer", "content": "Answer from the orders."}]
    for turn in range(3):
        items += [
            {"role": "user", "content": f"turn {turn}"},
            {
                "type": "function_call",
                "call_id": f"call_{turn}",
                "name": "query_orders",
                "arguments": compact({"customer": f"C-{turn}"}),
            },
            {"type": "function_call_output", "call_id": f"call_{turn}", "output": ORDERS},
        ]
    items.append({"role": "user", "content": "summary?"})
    return items


def responses_item_tokens(item: dict[str, Any]) -> int:
    texts = [item.get("role", ""), item.get("content", ""), item.get("call_id", "")]
    texts += [item.get("name", ""), item.get("arguments", ""), item.get("output", "")]
    return 3 + texts_tokens(texts, GPT_ENCODING)


def test_responses_truncation_auto_drops_items_from_the_start(provider_factory: Any) -> None:
    items = responses_items()
    full = 3 + sum(responses_item_tokens(i) for i in items)
    window = full // 2
    provider = provider_factory(context_window=window)
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model=GPT, input=items)  # type: ignore[arg-type]
    assert refused.value.code == "context_length_exceeded"
    assert provider.discards == []
    response = client.responses.create(model=GPT, input=items, truncation="auto")  # type: ignore[arg-type]
    assert response.truncation == "auto"
    (discard,) = provider.discards
    assert discard.policy == "front_discard" and discard.declared
    dropped = discard.dropped_messages
    assert discard.dropped_indices == tuple(range(1, 1 + dropped))  # the developer item stays
    kept = [items[0], *items[1 + dropped :]]
    assert response.usage is not None
    assert response.usage.input_tokens == 3 + sum(responses_item_tokens(i) for i in kept)
    assert response.usage.input_tokens <= window < full


def editing_history(uses: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "look at the orders"}]
    for n in range(uses):
        history.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{n}",
                        "name": "query_orders",
                        "input": {"customer": f"C-{n}"},
                    }
                ],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": ORDERS}
                ],
            }
        )
    return history


def cleared(history: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(history))
    for message in out:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("tool_use_id") in ids:
                block["content"] = PLACEHOLDER
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_context_editing_clears_old_tool_results(
    provider: ProviderStandIn, stream: bool
) -> None:
    history = editing_history(4)
    before = anthropic_tokens(history)
    edits = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": before // 2},
                "keep": {"type": "tool_uses", "value": 1},
            }
        ]
    }
    client = anthropic.Anthropic(base_url=provider.url, api_key="x", max_retries=0)
    arguments: dict[str, Any] = {
        "model": CLAUDE,
        "max_tokens": 10,
        "messages": history,
        "betas": [BETA],
        "context_management": edits,
    }
    if stream:
        with client.beta.messages.stream(**arguments) as events:
            message = events.get_final_message()
    else:
        message = client.beta.messages.create(**arguments)
    after = anthropic_tokens(cleared(history, {"toolu_0", "toolu_1", "toolu_2"}))
    assert message.usage.input_tokens == after < before
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.cache_creation_input_tokens == 0
    assert message.context_management is not None
    (applied,) = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert (applied.cleared_tool_uses, applied.cleared_input_tokens) == (3, before - after)
    (discard,) = provider.discards
    assert (discard.policy, discard.declared) == ("provider_edit", True)
    assert discard.cleared_ids == ("toolu_0", "toolu_1", "toolu_2")
    assert provider.requests[-1].headers["anthropic-beta"] == BETA


def test_anthropic_context_editing_below_its_trigger_and_without_the_beta(
    provider: ProviderStandIn,
) -> None:
    history = editing_history(2)
    client = anthropic.Anthropic(base_url=provider.url, api_key="x", max_retries=0)
    quiet = client.beta.messages.create(
        model=CLAUDE,
        max_tokens=10,
        messages=history,
        betas=[BETA],  # type: ignore[arg-type]
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
    )
    assert quiet.context_management is not None and quiet.context_management.applied_edits == []
    assert quiet.usage.input_tokens == anthropic_tokens(history)
    with pytest.raises(anthropic.BadRequestError, match="context_management"):
        client.messages.create(
            model=CLAUDE,
            max_tokens=10,
            messages=history,  # type: ignore[arg-type]
            extra_body={"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
        )
    assert provider.discards == []


def test_anthropic_clear_thinking_keeping_all_is_accepted_and_a_bad_keep_refused(
    provider: ProviderStandIn,
) -> None:
    """Claude Code sends ``clear_thinking_20251015`` with ``keep: "all"``; a keep that is
    neither "all" nor ``{type, value}`` is refused as Anthropic refuses it."""
    history = editing_history(2)
    client = anthropic.Anthropic(base_url=provider.url, api_key="x", max_retries=0)
    thinking = {"type": "clear_thinking_20251015", "keep": "all"}
    answer = client.beta.messages.create(
        model=CLAUDE,
        max_tokens=10,
        messages=history,
        betas=[BETA],  # type: ignore[arg-type]
        context_management={"edits": [thinking]},  # type: ignore[list-item]
    )
    assert answer.context_management is not None
    assert answer.context_management.applied_edits == []
    with pytest.raises(anthropic.BadRequestError, match=r"edits.0.keep.value: Field required"):
        client.beta.messages.create(
            model=CLAUDE,
            max_tokens=10,
            messages=history,
            betas=[BETA],  # type: ignore[arg-type]
            context_management={"edits": [{**thinking, "keep": 3}]},  # type: ignore[list-item]
        )


def lm_studio_history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You summarise the logs."},
        {"role": "user", "content": f"summarise: {LOGS}"},
    ]


def longest_prefix_within(text: str, room: int) -> str:
    """The longest start of ``text`` of at most ``room`` tokens, found one character at a
    time (the stand-in searches; this walks)."""
    kept = ""
    for end in range(1, len(text) + 1):
        if reference_count(text[:end], GPT_ENCODING) > room:
            break
        kept = text[:end]
    return kept


def test_lm_studio_stop_at_limit_stops_the_answer_where_the_window_fills(
    provider_factory: Any,
) -> None:
    history = lm_studio_history()
    prompt = chat_tokens(history, GPT_ENCODING)
    room = 40
    answer = "The workers timed out one after another. " * 10  # well over 40 tokens
    provider = provider_factory(
        context_window=prompt + room,
        stop_at_limit=True,
        script=[answer, ToolCall("search_logs", {"query": answer}), "fine", answer],
    )
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    stopped = client.chat.completions.create(model=GPT, messages=history, max_tokens=500)  # type: ignore[arg-type]
    assert stopped.choices[0].finish_reason == "length"
    assert stopped.to_dict()["stats"] == {"stopReason": "contextLengthReached"}
    content = stopped.choices[0].message.content
    assert content == longest_prefix_within(answer, room) and content
    assert stopped.usage is not None
    assert stopped.usage.prompt_tokens == prompt  # the prompt is kept whole
    assert stopped.usage.completion_tokens == reference_count(content, GPT_ENCODING) <= room
    # a tool call the window cannot hold whole is no call
    no_call = client.chat.completions.create(model=GPT, messages=history, max_tokens=room + 1)  # type: ignore[arg-type]
    assert no_call.choices[0].finish_reason == "length"
    assert not no_call.choices[0].message.tool_calls and not no_call.choices[0].message.content
    assert no_call.usage is not None and no_call.usage.completion_tokens == 0
    # within the window the answer ends by itself, and LM Studio says so too
    fine = client.chat.completions.create(model=GPT, messages=history, max_tokens=room)  # type: ignore[arg-type]
    assert fine.choices[0].finish_reason == "stop" and fine.choices[0].message.content == "fine"
    assert fine.to_dict()["stats"] == {"stopReason": "eosFound"}
    # streamed: the same cut text, the stop reason on the chunk that finishes
    chunks = list(
        client.chat.completions.create(model=GPT, messages=history, stream=True)  # type: ignore[call-overload]
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == content
    (last,) = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert last.choices[0].finish_reason == "length"
    assert last.to_dict()["stats"] == {"stopReason": "contextLengthReached"}
    assert provider.discards == []
    # a prompt over the window on its own is refused as without the mode
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model=GPT,
            messages=[*history, {"role": "user", "content": LOGS}],  # type: ignore[list-item]
        )
    assert refused.value.code == "context_length_exceeded"


def test_count_encoding_and_scale_change_what_is_reported(provider_factory: Any) -> None:
    history = [{"role": "user", "content": f"orders: {ORDERS}"}]
    provider = provider_factory(count_encoding="cl100k_base", count_scale=1.25)
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    completion = client.chat.completions.create(model=GPT, messages=history)  # type: ignore[arg-type]
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == round(chat_tokens(history, "cl100k_base") * 1.25)
    assert completion.usage.completion_tokens == round(reference_count("ok", "cl100k_base") * 1.25)
    claude = anthropic.Anthropic(base_url=provider.url, api_key="x", max_retries=0)
    counted = claude.messages.count_tokens(model=CLAUDE, messages=history)  # type: ignore[arg-type]
    assert counted.input_tokens == round(anthropic_tokens(history) * 1.25)


def test_the_command_takes_the_new_flags() -> None:
    history = [{"role": "user", "content": LOGS}]
    own = chat_tokens(history, GPT_ENCODING)
    window = round(own * 1.2) // 2
    flags = (
        "--token-truncate",
        "--n-keep",
        "4",
        "--count-scale",
        "1.2",
        "--context-window",
        str(window),
    )
    with provider_process(*flags) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        completion = client.chat.completions.create(model=GPT, messages=history)  # type: ignore[arg-type]
        assert completion.usage is not None
        own_keep = int(4 // 1.2)  # --n-keep is in reported units too
        expected = round(llama_truncated(own, int(window // 1.2), own_keep) * 1.2)
        assert completion.usage.prompt_tokens == expected <= window


def test_the_command_takes_the_refusal_and_stop_flags() -> None:
    history = [{"role": "user", "content": LOGS}]
    own = chat_tokens(history, GPT_ENCODING)
    with provider_process("--refuse-over-window", "--context-window", str(own)) as url:
        refused = httpx.post(
            f"{url}/v1/chat/completions", json={"model": GPT, "messages": history}, timeout=30
        )
        assert refused.status_code == 400 and refused.json() == llama_refusal(own, own)
        prompt = "System: you read logs.\n" + LOGS * 2
        completion = httpx.post(f"{url}/completion", json={"prompt": prompt}, timeout=30)
        n_prompt = reference_count(prompt, "cl100k_base")
        assert completion.json() == llama_refusal(n_prompt, own)
    with provider_process("--stop-at-limit", "--context-window", str(own)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        stopped = client.chat.completions.create(model=GPT, messages=history, max_tokens=2)  # type: ignore[arg-type]
        assert stopped.choices[0].finish_reason == "length"
        assert stopped.to_dict()["stats"] == {"stopReason": "contextLengthReached"}
        assert stopped.choices[0].message.content == ""  # the prompt filled the window
        assert stopped.usage is not None and stopped.usage.completion_tokens == 0
