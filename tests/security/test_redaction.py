"""Captured content is redacted before it is stored or sent, and fails closed.

The pure redaction (``ctxledger.redaction``), then the zero-SDK path: a real collector
with ``store_message_content`` on receives a GenAI span over real HTTP and its SQLite
file is searched byte for byte. (The SDK's own capture is in tests/e2e.)
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from ctxledger import semconv as sc
from ctxledger.redaction import LOOKAHEAD_CHARS, luhn_valid, redact, redact_or_none
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.collector.otlp_payloads import Span, new_trace_id, proto_body, stage_attributes

#: (secret, kind), each written inside Chinese text, as a tool result would hold it.
SECRETS = [
    ("sk-proj-Q3v9ZlX2bT7nR4mK8pW1sY6dF0", "api_key"),
    ("sk-ant-api03-abcdefghijklmnopqrstu", "api_key"),
    ("AKIAIOSFODNN7EXAMPLE", "api_key"),
    ("ghp_0123456789abcdefghijABCDEFGHIJklmnop", "api_key"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "api_key"),
    ("xoxb-1234567890-abcdefghijkl", "api_key"),
    ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "api_key"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "jwt"),
    ("张三.zhang+ops@example.com.cn", "email"),
    ("4111 1111 1111 1111", "card_number"),
    ("5500-0000-0000-0004", "card_number"),
    ("378282246310005", "card_number"),
]
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(("secret", "kind"), SECRETS)
def test_each_secret_is_masked_even_next_to_chinese_text(secret: str, kind: str) -> None:
    text = f"查询结果：{secret}，请勿外传"
    redacted = redact(text)
    ascii_part = secret.encode("ascii", "ignore").decode()
    assert ascii_part not in redacted.text and f"[REDACTED:{kind}]" in redacted.text
    assert redacted.text.startswith("查询结果：") and redacted.text.endswith("，请勿外传")
    assert redacted.counts == {kind: 1}


def test_bearer_tokens_and_private_keys() -> None:
    text = f"Authorization: Bearer abc.DEF-123_456~x\n{PRIVATE_KEY}\n之后"
    redacted = redact(text)
    assert redacted.text == (
        "Authorization: Bearer [REDACTED:bearer_token]\n[REDACTED:private_key]\n之后"
    )
    # A key block cut before its end is masked to the end, not left half visible.
    assert redact("前 -----BEGIN RSA PRIVATE KEY-----\nMIIEow").text == "前 [REDACTED:private_key]"


def test_what_is_not_a_secret_stays_verbatim() -> None:
    text = (
        "订单 ord-4111111111111112 金额 1234567890123 元；ISBN 978-0-306-40615-7；"
        "sk-short; skill-sk-abcdefghijklmnopqrstu is a suffix? AKIA-not; a@b; 邮件@例子.中国"
    )
    assert not luhn_valid("4111111111111112")
    redacted = redact(text)
    assert "ord-4111111111111112" in redacted.text and "1234567890123" in redacted.text
    assert "sk-short" in redacted.text and "邮件@例子.中国" in redacted.text
    assert redact(redacted.text).text == redacted.text  # masks are not masked again


def test_the_cut_comes_after_redaction_and_never_splits_a_character() -> None:
    secret = "sk-" + "a" * 40
    text = "中" * (100 - 10) + secret + "尾" * (LOOKAHEAD_CHARS * 2)
    kept = redact_or_none(text, limit=100)
    assert kept is not None and len(kept) == 100 and "aaaa" not in kept
    assert kept.startswith("中" * 90 + "[REDACTED")


def test_redaction_fails_closed() -> None:
    assert redact_or_none(b"sk-proj-Q3v9ZlX2bT7nR4mK8pW1sY6dF0") is None  # type: ignore[arg-type]
    assert redact_or_none(None) is None  # type: ignore[arg-type]


def _genai_span(trace_id: str, result: str) -> bytes:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "查一下客户"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "crm"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": result}]},
    ]
    now = time.time_ns()
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps(messages, ensure_ascii=False),
    }
    span = {
        "traceId": trace_id, "spanId": "1" * 16, "name": "chat gpt-4o",
        "startTimeUnixNano": str(now - 1000), "endTimeUnixNano": str(now),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }  # fmt: skip
    return json.dumps(
        {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
    ).encode()


def test_the_zero_sdk_opt_in_stores_only_redacted_content(tmp_path: Path) -> None:
    database = tmp_path / "content.db"
    settings = Settings(
        database_url=f"sqlite:///{database}", auto_migrate=True, sweep_interval_s=3600,
        store_message_content=True,
    )  # fmt: skip
    secrets = [secret for secret, _ in SECRETS] + [PRIVATE_KEY, "Bearer tok_live_51Habc9"]
    result = "客户记录：" + "；".join(secrets) + "；状态正常"
    with LiveCollector(settings) as collector:
        answer = httpx.post(
            f"{collector.url}/v1/traces",
            content=_genai_span("cd" * 16, result),
            headers={"content-type": "application/json"},
            timeout=60,  # the first zero-SDK span loads both vocabularies (~2 s, more under -n 4)
        )
        assert answer.status_code == 200, answer.text
    stored = database.read_bytes()
    for wal in tmp_path.glob("content.db-*"):
        stored += wal.read_bytes()
    for secret in secrets:
        core = secret.split("Bearer ")[-1].split("\n")[1 if "PRIVATE" in secret else 0]
        assert core.encode() not in stored, f"{secret!r} reached the database"
    with sqlite3.connect(database) as connection:
        texts = [
            row[0]
            for row in connection.execute("SELECT extra FROM measurements WHERE extra IS NOT NULL")
        ]
    assert any("[REDACTED:api_key]" in text and "状态正常" in text for text in texts), texts


def test_the_collector_redacts_content_in_sdk_spans_again_whatever_sent_them(
    tmp_path: Path,
) -> None:
    """An old SDK or another sender may put unredacted content in ``ctxledger.content.text``:
    the collector masks it before it is stored."""
    database = tmp_path / "sdk-content.db"
    settings = Settings(database_url=f"sqlite:///{database}", auto_migrate=True)
    attrs = stage_attributes(
        sc.STAGE_ORIGINAL, "call_old_sdk", chars=60, tokens=20, items=1,
        **{sc.CONTENT_TEXT: "token ghp_0123456789abcdefghijABCDEFGHIJklmnop 结束"},
    )  # fmt: skip
    with LiveCollector(settings) as collector:
        answer = httpx.post(
            f"{collector.url}/v1/traces",
            content=proto_body(new_trace_id(), [Span(attrs)]),
            headers={"content-type": "application/x-protobuf"},
        )
        assert answer.status_code == 200, answer.text
    with sqlite3.connect(database) as connection:
        (extra,) = connection.execute(
            "SELECT extra FROM measurements WHERE tool_call_id = ?", ("call_old_sdk",)
        ).fetchone()
    assert json.loads(extra)[sc.CONTENT_TEXT] == "token [REDACTED:api_key] 结束"
