"""Delivering one notification to one sink: signed webhook, Slack, or a log line."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx

from ctxledger.visible import escape_invisible_in_json
from ctxledger.webhooks import signed_headers
from ctxledger_collector.alerts.config import LogSink, SlackSink, WebhookSink
from ctxledger_collector.alerts.destination_guard import RefusedDestination, pin_destination
from ctxledger_collector.alerts.payload import slack_message

Sink = WebhookSink | SlackSink | LogSink


class DeliveryError(RuntimeError):
    """The sink did not accept the notification; it will be retried."""


def _post(
    http: httpx.Client, sink: WebhookSink | SlackSink, headers: dict[str, str], **kwargs: Any
) -> None:
    """POST to the sink's checked address; a redirect is an error, never followed."""
    try:
        pinned = pin_destination(sink.url, sink.allow_loopback)
    except RefusedDestination as error:
        raise DeliveryError(f"refused: {error}") from error
    try:
        response = http.post(
            pinned.url,
            headers={**headers, "Host": pinned.host_header},
            timeout=sink.timeout_s,
            follow_redirects=False,
            extensions={"sni_hostname": pinned.server_name},
            **kwargs,
        )
    except httpx.HTTPError as error:
        raise DeliveryError(f"{error.__class__.__name__}: {error}") from error
    if response.is_redirect:
        raise DeliveryError(f"HTTP {response.status_code}: redirects are not followed")
    if not response.is_success:
        raise DeliveryError(f"HTTP {response.status_code}: {response.text[:200]}")


def send(sink: Sink, webhook_id: str, payload: dict[str, Any], http: httpx.Client) -> None:
    """Deliver or raise :class:`DeliveryError`."""
    if isinstance(sink, WebhookSink):
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        headers = signed_headers(list(sink.secrets), webhook_id, body)
        _post(http, sink, headers, content=body)
    elif isinstance(sink, SlackSink):
        _post(http, sink, {}, json=slack_message(payload))
    else:
        line = escape_invisible_in_json(
            json.dumps({"ctxledger_alert": payload, "webhook_id": webhook_id}, ensure_ascii=False)
        )
        if sink.path:
            with open(sink.path, "a", encoding="utf-8") as log_file:
                log_file.write(line + "\n")
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
