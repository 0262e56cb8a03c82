"""The real ``openai`` package through ``httpx2`` event hooks: the ``sent`` stage is
measured from the exact bytes a (local, real) chat-completions server receives."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import httpx2
import openai

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client
from ctxledger_cli.provider import ProviderStandIn

from .helpers import count_tokens, manifest_spans, stage_spans
from .otlp_receiver import OTLPReceiver

MODEL = "gpt-4o"
GPT_4O_ENCODING = "o200k_base" if importlib.util.find_spec("bpe_openai") else "cl100k_base"
CALL_ID = "call_kb_1"
# Quotes, a backslash, a newline, a tab and CJK text: anything a JSON encoder may escape.
TOOL_CONTENT = json.dumps(
    {
        "results": [
            {"id": f"doc-{i}", "text": f'第{i}段: "引号" \\ 反斜杠\n换行\t制表 {i * 7}'}
            for i in range(12)
        ]
    },
    ensure_ascii=False,
)
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer from the knowledge base."},
    {"role": "user", "content": "退款需要人工审核吗?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": CALL_ID,
                "type": "function",
                "function": {"name": "search_knowledge", "arguments": '{"query": "退款"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": CALL_ID, "content": TOOL_CONTENT},
]


def _assert_sent_is_what_the_server_received(
    receiver: OTLPReceiver, llm_server: ProviderStandIn, request_id: str | None
) -> None:
    (received,) = llm_server.requests
    assert received.path.endswith("/chat/completions")
    body = json.loads(received.body)
    (tool_message,) = [m for m in body["messages"] if m.get("role") == "tool"]
    received_text: str = tool_message["content"]
    received_digest = hashlib.sha256(received_text.encode("utf-8")).hexdigest()

    stages = stage_spans(receiver.spans, CALL_ID)
    assert set(stages) == {sc.STAGE_ASSEMBLED, sc.STAGE_SENT}
    sent, assembled = stages[sc.STAGE_SENT].attributes, stages[sc.STAGE_ASSEMBLED].attributes
    assert sent[sc.CONTENT_SHA256] == received_digest
    assert sent[sc.SIZE_BYTES] == len(received_text.encode("utf-8"))
    assert sent[sc.SIZE_CHARS] == len(received_text)
    assert sent[sc.SIZE_ITEMS] == 12
    # gpt-4o's own encoding (where bpe-openai brings it), exactly as tiktoken counts it
    assert sent[sc.TOKENIZER] == assembled[sc.TOKENIZER] == GPT_4O_ENCODING
    assert sent[sc.SIZE_TOKENS] == count_tokens(received_text, GPT_4O_ENCODING)
    assert sent[sc.TOOL_NAME] == "search_knowledge"
    # assembled (measured before the call) and sent (measured by the hook) are one request
    assert request_id is not None
    assert assembled[sc.REQUEST_ID] == sent[sc.REQUEST_ID] == request_id
    assert assembled[sc.CONTENT_SHA256] == sent[sc.CONTENT_SHA256]
    assert assembled[sc.STEP] == sent[sc.STEP] == 1

    (manifest,) = manifest_spans(receiver.spans)
    attrs = manifest.attributes
    assert attrs[sc.REQUEST_ID] == request_id
    assert attrs[sc.REQUEST_TOOL_CALL_IDS] == [CALL_ID]
    assert attrs[sc.REQUEST_TOOL_CALLS] == [CALL_ID]
    assert attrs[sc.REQUEST_MODEL] == MODEL
    assert attrs[sc.TOKENIZER] == GPT_4O_ENCODING
    # the manifest counted the tokens of the whole body the server received
    assert attrs[sc.REQUEST_TOKENS] == count_tokens(
        received.body.decode("utf-8"), attrs[sc.TOKENIZER]
    )
    assert len({s.trace_id for s in receiver.spans}) == 1


def test_openai_sync_client_sent_stage_matches_received_bytes(
    configure_sdk: Callable[..., Client],
    receiver: OTLPReceiver,
    llm_server: ProviderStandIn,
) -> None:
    configure_sdk()
    http_client = httpx2.Client(event_hooks=ctxledger.httpx_event_hooks())
    client = openai.OpenAI(
        base_url=llm_server.base_url, api_key="x", http_client=http_client, max_retries=0
    )
    try:
        with ctxledger.run("openai-agent"):
            request_id = ctxledger.measure_messages(MESSAGES, model=MODEL)
            completion = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    finally:
        client.close()
    assert completion.choices[0].message.content == "ok"
    assert ctxledger.flush()
    _assert_sent_is_what_the_server_received(receiver, llm_server, request_id)


def test_openai_async_client_sent_stage_matches_received_bytes(
    configure_sdk: Callable[..., Client],
    receiver: OTLPReceiver,
    llm_server: ProviderStandIn,
) -> None:
    configure_sdk()

    async def agent() -> tuple[str | None, str | None]:
        http_client = httpx2.AsyncClient(event_hooks=ctxledger.httpx_event_hooks(is_async=True))
        client = openai.AsyncOpenAI(
            base_url=llm_server.base_url, api_key="x", http_client=http_client, max_retries=0
        )
        try:
            with ctxledger.run("openai-agent"):
                request_id = ctxledger.measure_messages(MESSAGES, model=MODEL)
                completion = await client.chat.completions.create(model=MODEL, messages=MESSAGES)
        finally:
            await client.close()
        return request_id, completion.choices[0].message.content

    request_id, answer = asyncio.run(agent())
    assert answer == "ok"
    assert ctxledger.flush()
    _assert_sent_is_what_the_server_received(receiver, llm_server, request_id)
