"""POST OTLP bodies the way a real exporter does: a 503 or 429 (admission control: nothing
was stored) is retried after its Retry-After, so tests that send concurrently do not
depend on how busy the machine is."""

from __future__ import annotations

import time

import httpx

PROTOBUF = "application/x-protobuf"
RETRIED_STATUSES = frozenset({429, 503})


def post_otlp(
    http: httpx.Client, url: str, content: bytes, *, give_up_after_s: float = 120.0
) -> httpx.Response:
    """POST one OTLP/protobuf body to ``{url}/v1/traces``; the final answer (not a 503/429
    unless the collector kept refusing for ``give_up_after_s``)."""
    deadline = time.monotonic() + give_up_after_s
    while True:
        response = http.post(
            f"{url}/v1/traces", content=content, headers={"content-type": PROTOBUF}
        )
        if response.status_code not in RETRIED_STATUSES or time.monotonic() > deadline:
            return response
        time.sleep(min(float(response.headers.get("retry-after", "1")), 2.0))
