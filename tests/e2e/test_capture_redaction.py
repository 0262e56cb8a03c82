"""The SDK's content capture redacts before anything leaves the process.

The real SDK exports over real OTLP/HTTP to a receiver; the bytes on the wire are
searched for every secret, and the sizes and digests still describe the original text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client

from .helpers import stage_spans
from .otlp_receiver import OTLPReceiver

SECRETS = (
    "sk-proj-Q3v9ZlX2bT7nR4mK8pW1sY6dF0",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
    "ops.lead@example.com",
    "4111 1111 1111 1111",
)


def test_captured_content_is_redacted_on_the_wire(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk(capture_content=True)
    result = json.dumps(
        [{"id": f"客户-{i}", "note": secret} for i, secret in enumerate(SECRETS)],
        ensure_ascii=False,
    )
    with ctxledger.run("crm-agent"):
        ctxledger.measure(sc.STAGE_ORIGINAL, result, tool_call_id="call_crm", tool_name="crm")
    assert ctxledger.flush()
    (span,) = stage_spans(receiver.spans, "call_crm").values()
    captured = span.attributes[sc.CONTENT_TEXT]
    assert captured.count("[REDACTED:") == len(SECRETS)
    assert "客户-0" in captured and "客户-4" in captured
    # What is measured is the original: the digest and sizes are of the unredacted text.
    assert span.attributes[sc.CONTENT_SHA256] == hashlib.sha256(result.encode()).hexdigest()
    assert span.attributes[sc.SIZE_CHARS] == len(result)
    assert span.attributes[sc.SIZE_ITEMS] == len(SECRETS)
    for request in receiver.requests:
        for secret in SECRETS:
            assert secret.encode() not in request.body
