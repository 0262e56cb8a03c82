"""The SDK end to end against a real OTLP receiver: the four stages of a tool result, the
request manifest, privacy, the API key and the never-raise guarantee."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client

from .helpers import count_tokens, manifest_spans, stage_spans
from .otlp_receiver import OTLPReceiver, ReceivedSpan

MODEL = "gpt-4-turbo"  # a cl100k_base model: the token counts do not depend on downloads
CALL_ID = "call_search_1"
QUESTION = "退款流程在哪些情况下需要人工审核? 请列出所有相关规定."


def _snippet(i: int, secret: str = "") -> dict[str, Any]:
    return {
        "id": f"kb-{i:03d}",
        "score": round(0.95 - i * 0.01, 2),
        "source": f"policy/refund/section-{i // 5 + 1}.md",
        "text": f"第{i + 1}条: 退款金额超过阈值或订单状态为 refunding 时, 需人工审核. {secret}" * 4,
    }


def _assistant_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        ],
    }


def _send(messages: list[dict[str, Any]]) -> tuple[str | None, str | None, bytes]:
    """Measure ``messages`` as assembled, then the body built from them as sent."""
    assembled_id = ctxledger.measure_messages(messages)
    body = json.dumps({"model": MODEL, "messages": messages}, ensure_ascii=False).encode()
    sent_id = ctxledger.measure_request(body)
    return assembled_id, sent_id, body


def run_seed_004(secret: str = "") -> dict[str, Any]:
    """Seed 004: a retrieval tool returns 50 records, the context manager silently keeps
    20, the request goes out. Returns what the agent did, for the assertions."""

    @ctxledger.tool
    def search_knowledge(query: str) -> dict[str, Any]:
        return {"query": query, "results": [_snippet(i, secret) for i in range(50)]}

    with ctxledger.run("kb-agent"):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "你是企业知识库问答助手."},
            {"role": "user", "content": f"{QUESTION} {secret}"},
        ]
        first_ids = _send(messages)  # step 1: the model answers with a tool call
        messages.append(_assistant_call(CALL_ID, "search_knowledge", {"query": QUESTION}))
        with ctxledger.tool_call(CALL_ID):
            serialized = search_knowledge(QUESTION)
        data = json.loads(serialized)
        data["results"] = data["results"][:20]  # the silent trim: 50 -> 20
        assembled = json.dumps(data, ensure_ascii=False)
        messages.append({"role": "tool", "tool_call_id": CALL_ID, "content": assembled})
        assembled_id, sent_id, body = _send(messages)  # step 2
    assert ctxledger.flush()
    return {
        "serialized": serialized,
        "assembled": assembled,
        "first_ids": first_ids,
        "assembled_id": assembled_id,
        "sent_id": sent_id,
        "body": body,
    }


def _all_values(span: ReceivedSpan) -> list[str]:
    values: list[str] = [span.name]
    for attributes in (span.attributes, span.resource):
        for key, value in attributes.items():
            values.append(key)
            values.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return values


def test_four_stages_and_manifest_follow_the_wire_contract(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk(service_name="seed-004-agent")
    agent = run_seed_004()
    spans = receiver.spans
    stages = stage_spans(spans, CALL_ID)
    assert set(stages) == {
        sc.STAGE_ORIGINAL,
        sc.STAGE_SERIALIZED,
        sc.STAGE_ASSEMBLED,
        sc.STAGE_SENT,
    }
    texts = {
        sc.STAGE_ORIGINAL: agent["serialized"],  # the default serializer: JSON, no escaping
        sc.STAGE_SERIALIZED: agent["serialized"],
        sc.STAGE_ASSEMBLED: agent["assembled"],
        sc.STAGE_SENT: agent["assembled"],
    }
    full_ids = [f"kb-{i:03d}" for i in range(50)]
    expected_ids = {
        sc.STAGE_ORIGINAL: full_ids,
        sc.STAGE_SERIALIZED: full_ids,
        sc.STAGE_ASSEMBLED: full_ids[:20],
        sc.STAGE_SENT: full_ids[:20],
    }
    for stage, span in stages.items():
        attrs, text = span.attributes, texts[stage]
        assert attrs[sc.STAGE] == stage
        assert attrs[sc.STAGE_ORDER] == sc.BUILTIN_STAGE_ORDER[stage]
        assert attrs[sc.TOOL_CALL_ID] == CALL_ID
        assert attrs[sc.TOOL_NAME] == "search_knowledge"
        assert attrs[sc.AGENT_NAME] == "kb-agent"
        assert attrs[sc.SIZE_CHARS] == len(text)
        assert attrs[sc.SIZE_BYTES] == len(text.encode("utf-8"))
        assert attrs[sc.SIZE_BYTES] > attrs[sc.SIZE_CHARS]  # Chinese text: multi-byte
        assert attrs[sc.TOKENIZER] == "cl100k_base"
        assert attrs[sc.SIZE_TOKENS] == count_tokens(text, "cl100k_base")
        assert attrs[sc.SIZE_ITEMS] == len(expected_ids[stage])
        assert attrs[sc.ITEMS_IDS] == expected_ids[stage]
        assert attrs[sc.ITEMS_IDS_COMPLETE] is True
        assert attrs[sc.CONTENT_SHA256] == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert attrs[sc.JSON_VALID] is True
        assert span.dropped_attributes_count == 0
        assert span.resource[sc.SERVICE_NAME] == "seed-004-agent"
    # The request id: on the request stages only, and the same on both.
    assembled, sent = stages[sc.STAGE_ASSEMBLED].attributes, stages[sc.STAGE_SENT].attributes
    assert sc.REQUEST_ID not in stages[sc.STAGE_ORIGINAL].attributes
    assert sc.REQUEST_ID not in stages[sc.STAGE_SERIALIZED].attributes
    assert assembled[sc.REQUEST_ID] == sent[sc.REQUEST_ID] == agent["assembled_id"]
    assert agent["sent_id"] == agent["assembled_id"]
    # Steps: the result came back after request 1 and went out with request 2.
    assert stages[sc.STAGE_ORIGINAL].attributes[sc.STEP] == 1
    assert stages[sc.STAGE_SERIALIZED].attributes[sc.STEP] == 1
    assert assembled[sc.STEP] == sent[sc.STEP] == 2
    # The loss is visible in the numbers: 50 -> 20 between serialized and assembled.
    assert stages[sc.STAGE_SERIALIZED].attributes[sc.SIZE_TOKENS] > assembled[sc.SIZE_TOKENS]

    manifests = {m.attributes[sc.REQUEST_ID]: m.attributes for m in manifest_spans(spans)}
    assert set(manifests) == {agent["first_ids"][1], agent["sent_id"]}
    first = manifests[agent["first_ids"][1]]
    assert first[sc.STEP] == 1
    assert first[sc.REQUEST_TOOL_CALL_IDS] == []
    assert first[sc.REQUEST_TOOL_CALLS] == []
    second = manifests[agent["sent_id"]]
    assert second[sc.STEP] == 2
    assert second[sc.REQUEST_TOOL_CALL_IDS] == [CALL_ID]
    assert second[sc.REQUEST_TOOL_CALLS] == [CALL_ID]
    assert second[sc.REQUEST_MODEL] == MODEL
    assert second[sc.REQUEST_CONTEXT_WINDOW] == 128_000
    assert second[sc.REQUEST_TOKENS] == count_tokens(agent["body"].decode(), "cl100k_base")

    # One run, one trace: every span the run produced shares the trace id, and the
    # measurements hang under the exported run span.
    assert len(spans) == 7  # the run, four stages, two manifests
    assert len({s.trace_id for s in spans}) == 1
    assert len({s.span_id for s in spans}) == 7
    (run_span,) = [s for s in spans if s.name == sc.SPAN_RUN]
    assert all(s.parent_span_id == run_span.span_id for s in spans if s is not run_span)


def test_each_run_is_its_own_trace(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk()
    for call in ("call_a", "call_b"):
        with ctxledger.run("agent"):
            ctxledger.measure(sc.STAGE_ORIGINAL, "one result", tool_call_id=call)
            ctxledger.measure(sc.STAGE_SERIALIZED, "one result", tool_call_id=call)
    assert ctxledger.flush()
    traces = {
        call: {s.trace_id for s in stage_spans(receiver.spans, call).values()}
        for call in ("call_a", "call_b")
    }
    assert len(traces["call_a"]) == len(traces["call_b"]) == 1
    assert traces["call_a"] != traces["call_b"]


SENTINEL = "SENTINEL-c0ffee-5f1b9e-私密"


def test_no_attribute_carries_content_by_default(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk()
    run_seed_004(secret=SENTINEL)
    with ctxledger.run("plain-text-agent"):  # a plain-text result (measured as lines)
        ctxledger.measure(
            sc.STAGE_ORIGINAL, f"line one\n{SENTINEL}\nline three", tool_call_id="call_txt"
        )
    assert ctxledger.flush()
    spans = receiver.spans
    assert len(stage_spans(spans, CALL_ID)) == 4
    assert stage_spans(spans, "call_txt")[sc.STAGE_ORIGINAL].attributes[sc.SIZE_ITEMS] == 3
    for span in spans:
        assert sc.CONTENT_TEXT not in span.attributes
        leaks = [value for value in _all_values(span) if "SENTINEL" in value]
        assert leaks == [], f"{span.name} carries tool content: {leaks}"
    # Nor anywhere in the bytes that went over the wire.
    for request in receiver.requests:
        assert b"SENTINEL" not in request.body


def test_capture_content_opt_in_sends_the_text(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk(capture_content=True)
    agent = run_seed_004(secret=SENTINEL)
    stages = stage_spans(receiver.spans, CALL_ID)
    expected = {
        sc.STAGE_ORIGINAL: agent["serialized"],
        sc.STAGE_SERIALIZED: agent["serialized"],
        sc.STAGE_ASSEMBLED: agent["assembled"],
        sc.STAGE_SENT: agent["assembled"],
    }
    assert set(stages) == set(expected)
    for stage, span in stages.items():
        text = span.attributes[sc.CONTENT_TEXT]
        assert SENTINEL in text
        assert text == expected[stage]
        assert hashlib.sha256(text.encode()).hexdigest() == span.attributes[sc.CONTENT_SHA256]


@pytest.mark.parametrize(
    ("api_key", "env_key", "expected"),
    [
        ("k1", None, "Bearer k1"),
        (None, "k2", "Bearer k2"),
        (None, None, None),
    ],
    ids=["argument", "environment", "none"],
)
def test_api_key_is_sent_as_bearer_token(
    configure_sdk: Callable[..., Client],
    receiver: OTLPReceiver,
    monkeypatch: pytest.MonkeyPatch,
    api_key: str | None,
    env_key: str | None,
    expected: str | None,
) -> None:
    if env_key is not None:
        monkeypatch.setenv("CTXLEDGER_API_KEY", env_key)
    configure_sdk(api_key=api_key)
    ctxledger.measure(sc.STAGE_ORIGINAL, "result", tool_call_id="call_1")
    assert ctxledger.flush()
    requests = receiver.requests
    assert requests and all(r.status == 200 for r in requests)
    assert [r.headers.get("authorization") for r in requests] == [expected] * len(requests)
    assert len(receiver.spans) == 1


def test_measure_never_raises_into_the_agent(
    configure_sdk: Callable[..., Client],
    receiver: OTLPReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure_sdk()
    monkeypatch.setenv("CTXLEDGER_RAISE_ERRORS", "0")
    assert ctxledger.measure("nonsense-custom-stage", "x", tool_call_id="c") is None
    # The SDK keeps working afterwards, and a custom stage with an order is fine.
    ctxledger.measure("nonsense-custom-stage", "x", tool_call_id="c", order=25)
    assert ctxledger.flush()
    (span,) = receiver.spans
    assert span.attributes[sc.STAGE] == "nonsense-custom-stage"
    assert span.attributes[sc.STAGE_ORDER] == 25


def test_measure_raises_under_pytest_by_default(
    configure_sdk: Callable[..., Client],
    receiver: OTLPReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure_sdk()
    monkeypatch.delenv("CTXLEDGER_RAISE_ERRORS", raising=False)
    with pytest.raises(ValueError, match="needs an order"):
        ctxledger.measure("nonsense-custom-stage", "x", tool_call_id="c")
    assert ctxledger.flush()
    assert receiver.spans == []
