"""The Alerts page's notification history: every notification to every sink, filtered by
rule and delivery, paged, and one opened with its delivery and examples."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ctxledger_dashboard.alert_style import (
    DELIVERY_COLORS,
    DELIVERY_HELP,
    STATE_COLORS,
    color_by_value,
    sink_label,
    timestamp,
)
from ctxledger_dashboard.incident_tables import PAGE_SIZE
from ctxledger_dashboard.markdown_text import code, plain
from ctxledger_dashboard.page_kit import fetch, plural, run_link, when
from ctxledger_dashboard.pagers import page_controls
from ctxledger_dashboard.verdict_style import badge
from ctxledger_dashboard.visible_text import visible, visible_data, visible_frame

ANY = "any"
DELIVERIES = (ANY, "pending", "delivered", "dead")


def _delivery(n: dict[str, Any]) -> str:
    if n["delivery"] == "pending" and n["attempts"] and n["next_attempt_at"]:
        return f"pending (retry {when(n['next_attempt_at'])[11:19]})"
    return str(n["delivery"])


def _worst_example(n: dict[str, Any]) -> str | None:
    examples = n["payload"].get("examples") or []
    if not examples:
        return None
    e = examples[0]
    return run_link(e["trace_id"], e["step"], e["tool_call_id"])


def _worst_call(n: dict[str, Any]) -> str | None:
    examples = n["payload"].get("examples") or []
    return str(examples[0]["tool_call_id"]) if examples else None


def _history_filters(rules: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    left, right = st.columns([1, 2])
    rule = left.selectbox(
        "Rule",
        [r["name"] for r in rules],
        index=None,
        placeholder="all rules",
        key="alerts_rule",
    )
    delivery = right.segmented_control(
        "Delivery",
        DELIVERIES,
        default=ANY,
        format_func=lambda d: "any delivery" if d == ANY else d,
        required=True,
        key="alerts_delivery",
    )
    return rule, None if delivery in (None, ANY) else delivery


def notification_history(rules: list[dict[str, Any]]) -> None:
    st.subheader("Notifications")
    st.caption(
        "Every notification to every sink, newest first: firing ones carry the number of "
        "matching journeys and the worst examples; resolved ones close a group."
    )
    rule, delivery = _history_filters(rules)
    key = f"alerts_page:{rule}:{delivery}"
    st.session_state.setdefault(key, 0)
    offset = st.session_state[key] * PAGE_SIZE
    listing = fetch("alerts", limit=PAGE_SIZE, offset=offset, rule=rule, delivery=delivery)
    notifications = listing["notifications"]
    if not notifications and offset:
        st.session_state[key] = 0
        st.rerun()
    if not notifications:
        st.info("No notification matches these filters.", icon=":material/filter_alt_off:")
        return
    data = pd.DataFrame(
        [
            {
                "sent": timestamp(n["created_at"]),
                "status": n["status"],
                "rule": n["rule"],
                "agent · tool": f"{n['agent'] or 'any'} · {n['tool'] or 'any'}",
                "journeys": n["payload"].get("count") if n["status"] == "firing" else None,
                "worst example": _worst_example(n),
                "worst call": _worst_call(n),
                "sink": sink_label(n["sink"], n["sink_type"]),
                "delivery": _delivery(n),
                "attempts": n["attempts"],
                "last error": n["last_error"] or "",
            }
            for n in notifications
        ]
    )
    st.dataframe(
        visible_frame(data)
        .style.map(color_by_value(STATE_COLORS), subset=["status"])
        .map(lambda v: color_by_value(DELIVERY_COLORS)(str(v).split(" ")[0]), subset=["delivery"]),
        hide_index=True,
        width="stretch",
        column_config={
            "sent": st.column_config.DatetimeColumn(format="distance"),
            "delivery": st.column_config.TextColumn(
                help="; ".join(f"{k}: {v}" for k, v in DELIVERY_HELP.items())
            ),
            "last error": st.column_config.TextColumn(width="medium"),
            # Not the call id out of the link: the link holds it raw, "worst call" visible.
            "worst example": st.column_config.LinkColumn(
                display_text="open →", help="the worst matching journey, in its run"
            ),
        },
    )
    page_controls(key, PAGE_SIZE, listing["total"], len(notifications), listing["next_offset"])
    notification_details(notifications)


def tokens_text(tokens: int | None, unknown: int = 0) -> str:
    """Lost tokens as a notification gives them: null when unknown, never shown as 0."""
    if tokens is None:
        return "unknown tokens"
    return f"{tokens:,} tokens" + (
        f" (unknown for {plural(unknown, 'journey')})" if unknown else ""
    )


def notification_details(notifications: list[dict[str, Any]]) -> None:
    """One notification of the page: its delivery and every example, with links."""
    by_id = {n["id"]: n for n in notifications}
    chosen = st.selectbox(
        "Open a notification",
        list(by_id),
        format_func=lambda i: visible(
            f"{when(by_id[i]['created_at'])} · {by_id[i]['status']} · {by_id[i]['rule']} · "
            f"{by_id[i]['agent'] or 'any'} · {by_id[i]['tool'] or 'any'} → {by_id[i]['sink']}"
        ),
        key=f"alerts_detail:{','.join(map(str, by_id))}",
    )
    n = by_id[chosen if chosen is not None else notifications[0]["id"]]
    payload = n["payload"]
    with st.container(border=True):
        window = payload.get("window") or {}
        st.markdown(
            f"**{n['status']}** · {code(n['rule'])} ({payload.get('severity')}) · "
            f"window {when(window.get('start'))} → {when(window.get('end'))}  \n"
            f"Sink {sink_label(n['sink'], n['sink_type'], code)}: **{n['delivery']}** after "
            f"{plural(n['attempts'], 'attempt')}"
            + (f", delivered {when(n['delivered_at'])}" if n["delivered_at"] else "")
            + (f", next attempt {when(n['next_attempt_at'])}" if n["next_attempt_at"] else "")
        )
        if n["last_error"]:
            st.error(f"Last error: {plain(n['last_error'])}", icon=":material/error:")
        examples = payload.get("examples") or []
        if examples:
            st.markdown(
                f"**{plural(payload.get('count', 0), 'matching journey')}**, "
                f"{payload.get('lost_items', 0):,} items and "
                f"{tokens_text(payload.get('lost_tokens', 0), payload.get('tokens_unknown', 0))} "
                "lost. Worst examples:\n\n"
                + "\n".join(
                    f"- {badge(e['verdict'])} [{code(e['tool_call_id'])} step {e['step']}]"
                    f"({run_link(e['trace_id'], e['step'], e['tool_call_id'])}): lost "
                    f"{e['lost_items']:,} items, {tokens_text(e['lost_tokens'])}"
                    + (
                        f", {e['lost_priority_items']} must-keep"
                        if e["lost_priority_items"]
                        else ""
                    )
                    + f" · [run]({run_link(e['trace_id'])})"
                    for e in examples
                )
            )
        elif n["status"] == "resolved":
            st.caption("Resolved: no new matching journey for the quiet period.")
        st.caption(
            f"webhook-id {code(n['webhook_id'])} (the same on every retry: receivers drop "
            f"duplicates by it) · batch {code(n['batch_id'])}"
        )
        label = "Payload (JSON, as sent to webhooks; invisible characters as ⟨U+…⟩)"
        with st.expander(label, icon=":material/data_object:"):
            st.json(visible_data(payload), expanded=2)
