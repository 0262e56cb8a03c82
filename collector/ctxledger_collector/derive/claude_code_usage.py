"""The ``received`` stage of Claude Code's requests: the input tokens its
``claude_code.api_request`` event reports (``input_tokens`` + ``cache_read_tokens`` +
``cache_creation_tokens``, as Anthropic counts them apart), read against the request's
body as the SDK reads a request's usage.

The usage event names no request; the ``api_response_body`` event Claude Code emits after
it (a higher ``event.sequence``) names the ``request_body_id``. The three are paired
within one export, where Claude Code's batches put them; a usage left unpaired gives no
stage (never a guess). A body cut by the telemetry gives none either.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from ctxledger.verdicts.model import ReceivedRecord
from ctxledger_collector.derive import claude_code
from ctxledger_collector.derive.claude_code_logs import LogEvent, RequestBody
from ctxledger_collector.derive.received import received_record
from ctxledger_collector.derive.usage import token_count

USAGE_EVENT: Final = "claude_code.api_request"
RESPONSE_BODY_EVENT: Final = "claude_code.api_response_body"
SEQUENCE: Final = "event.sequence"
REQUEST_BODY_ID: Final = "request_body_id"
MODEL: Final = "model"
INPUT_TOKEN_COUNTS: Final = ("input_tokens", "cache_read_tokens", "cache_creation_tokens")

Place = tuple[str, int]


def reported_input_tokens(attributes: dict[str, Any]) -> int | None:
    """Every input token the server read: the uncached ones and the cache's."""
    counts = [token_count(attributes.get(name)) for name in INPUT_TOKEN_COUNTS]
    if counts[0] is None:
        return None
    return sum(c or 0 for c in counts)


def _place(event: LogEvent) -> Place | None:
    session = claude_code.session_of(event.attributes)
    sequence = token_count(event.attributes.get(SEQUENCE))
    return None if session is None or sequence is None else (session, sequence)


class UsagePairs:
    """One export's request bodies and usage events, each usage paired with the request
    whose response event follows it. Claude Code's main loop sends one request at a time;
    where requests overlap (subagents), two usages wait for one response and neither is
    paired: a wrong pair could show a loss that never was."""

    def __init__(self) -> None:
        self.bodies: dict[str, RequestBody] = {}
        #: Per session, the usage events not paired yet: (sequence, tokens, model).
        self.waiting: dict[str, list[tuple[int, int, Any]]] = {}

    def add_body(self, body: RequestBody) -> None:
        self.bodies[body.manifest.request_id] = body

    def add_event(self, event: LogEvent) -> tuple[RequestBody, ReceivedRecord] | None:
        """The request and its ``received`` record, once ``event`` completes a pair."""
        place = _place(event)
        if place is None:
            return None
        session, sequence = place
        waiting = self.waiting.setdefault(session, [])
        if event.event_name == USAGE_EVENT:
            tokens = reported_input_tokens(event.attributes)
            if tokens is not None:
                waiting.append((sequence, tokens, event.attributes.get(MODEL)))
            return None
        request = event.attributes.get(REQUEST_BODY_ID)
        if event.event_name != RESPONSE_BODY_EVENT or not isinstance(request, str):
            return None
        before = [usage for usage in waiting if usage[0] < sequence]
        if len(before) != 1:
            return None
        waiting.remove(before[0])
        _, tokens, model = before[0]
        body = self.bodies.get(request)
        if body is None or (model is not None and model != body.manifest.model):
            return None
        manifest = dataclasses.replace(body.manifest, tokens=tokens)
        record = received_record(body.span, body.exchange, manifest.model, manifest)
        return None if record is None else (body, record)
