"""Server-sent events framed as the providers frame them.

OpenAI Chat Completions sends ``data: <json>`` frames and ends with ``data: [DONE]``;
the Responses API and Anthropic name each event (``event: <type>`` then ``data: <json>``)
and send no ``[DONE]``. Each frame ends with a blank line."""

from __future__ import annotations

import json
from typing import Any

DONE = b"data: [DONE]\n\n"


def _json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def data_frame(payload: Any) -> bytes:
    return f"data: {_json(payload)}\n\n".encode()


def named_frame(event: str, payload: Any) -> bytes:
    return f"event: {event}\ndata: {_json(payload)}\n\n".encode()
