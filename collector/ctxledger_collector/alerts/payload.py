"""What a notification says: the webhook JSON payload and its Slack rendering."""

from __future__ import annotations

from typing import Any

from ctxledger.verdicts import VERDICT_SEVERITY

PAYLOAD_TYPE = "ctxledger.alert"
PAYLOAD_VERSION = 1
MAX_EXAMPLES = 5


def _dashboard_link(dashboard_url: str | None, example: dict[str, Any]) -> str | None:
    if not dashboard_url:
        return None
    link = f"{dashboard_url.rstrip('/')}/run?trace_id={example['trace_id']}"
    if example.get("step") is not None:
        link += f"&step={example['step']}"
    return link + f"&tool_call_id={example['tool_call_id']}"


def _known_tokens(event: dict[str, Any]) -> int:
    """An event's lost tokens where known; 0 where unknown (counted in ``tokens_unknown``)."""
    return 0 if event.get("tokens_unknown") else int(event["lost_tokens"])


def _tokens_text(tokens: int | None, unknown: int = 0) -> str:
    if tokens is None:
        return "unknown tokens"
    return f"{tokens:,} tokens" + (f" (unknown for {unknown})" if unknown else "")


def worst_examples(events: list[dict[str, Any]], dashboard_url: str | None) -> list[dict[str, Any]]:
    """The worst events first (verdict, then lost items and tokens), at most five."""
    ranked = sorted(
        events,
        key=lambda e: (
            -VERDICT_SEVERITY.get(e["verdict"], 0),
            -e["lost_items"],
            -_known_tokens(e),
            e["trace_id"],
            e["tool_call_id"],
        ),
    )
    return [
        {
            "trace_id": e["trace_id"],
            "tool_call_id": e["tool_call_id"],
            "request_id": e["request_key"] or None,
            "step": e["step"],
            "verdict": e["verdict"],
            "lost_items": e["lost_items"],
            "lost_tokens": None if e.get("tokens_unknown") else e["lost_tokens"],
            "lost_priority_items": e["lost_priority_items"],
            "links": {
                "run": f"/api/v1/runs/{e['trace_id']}",
                "dashboard": _dashboard_link(dashboard_url, e),
            },
        }
        for e in ranked[:MAX_EXAMPLES]
    ]


def build_payload(
    *,
    status: str,
    rule: str,
    severity: str,
    agent: str,
    tool: str,
    events: list[dict[str, Any]],
    window_start: float,
    window_end: float,
    batch_id: str,
    dashboard_url: str | None,
) -> dict[str, Any]:
    """The webhook body (schema in docs/alerting.md)."""
    return {
        "type": PAYLOAD_TYPE,
        "version": PAYLOAD_VERSION,
        "status": status,
        "rule": rule,
        "severity": severity,
        "group": {"rule": rule, "agent": agent or None, "tool": tool or None},
        "count": len(events),
        "lost_items": sum(e["lost_items"] for e in events),
        "lost_tokens": sum(_known_tokens(e) for e in events),
        "tokens_unknown": sum(1 for e in events if e.get("tokens_unknown")),
        "window": {"start": window_start, "end": window_end},
        "examples": worst_examples(events, dashboard_url),
        "batch_id": batch_id,
    }


def slack_message(payload: dict[str, Any]) -> dict[str, Any]:
    """A Slack incoming-webhook message (blocks plus a plain-text fallback)."""
    group = payload["group"]
    where = f"{group['agent'] or 'any agent'} · {group['tool'] or 'any tool'}"
    if payload["status"] == "resolved":
        title = f":white_check_mark: Resolved: {payload['rule']} ({where})"
        text = "No new matching journeys for the quiet period."
    else:
        title = f":rotating_light: {payload['severity'].upper()}: {payload['rule']} ({where})"
        text = (
            f"*{payload['count']}* journeys lost content: {payload['lost_items']} items, "
            f"{_tokens_text(payload['lost_tokens'], payload.get('tokens_unknown', 0))}."
        )
    lines = []
    for example in payload["examples"]:
        link = example["links"]["dashboard"]
        label = f"`{example['tool_call_id']}` step {example['step']}"
        label = f"<{link}|{label}>" if link else label
        lines.append(
            f"• *{example['verdict']}* {label}: lost {example['lost_items']} items, "
            f"{_tokens_text(example['lost_tokens'])}"
        )
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
    ]
    if lines:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
    return {"text": f"{title} — {text}", "blocks": blocks}
