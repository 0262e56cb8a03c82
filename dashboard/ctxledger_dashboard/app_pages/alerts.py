"""Alerts: which alert groups fire, every notification and how its delivery went, the rules
and sinks the collector runs with, and a pointer to the Prometheus rules."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ctxledger_dashboard.alert_notifications import notification_history
from ctxledger_dashboard.alert_style import (
    DELIVERY_HELP,
    SEVERITY_COLORS,
    SEVERITY_ORDER,
    STATE_COLORS,
    color_by_value,
    rule_in_words,
    sink_label,
    timestamp,
)
from ctxledger_dashboard.docs_links import docs_link
from ctxledger_dashboard.markdown_text import code, plain
from ctxledger_dashboard.page_kit import api_url, fetch, live, plural, when
from ctxledger_dashboard.rejections_panel import rejected_spans
from ctxledger_dashboard.visible_text import visible_frame

PROMETHEUS_RULES = docs_link("prometheus-alerts.yml")


def _rules_sentence(rules: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{code(r['name'])}: {plain(rule_in_words(r))} ({r['severity']})" for r in rules
    )


def _sinks_sentence(sinks: list[dict[str, Any]]) -> str:
    return ", ".join(sink_label(s["name"], s["type"], code) for s in sinks)


def _incidents_link(agent: str | None, tool: str | None) -> str:
    # Incidents is the app's default page: Streamlit serves it at the root URL.
    query = {k: v for k, v in (("agent", agent), ("tool", tool), ("range", "all-time")) if v}
    return "/?" + urlencode(query)


def _headline(data: dict[str, Any], pending: int, dead: int) -> None:
    groups = data["groups"]
    firing = [g for g in groups if g["state"] == "firing"]
    columns = st.columns(4)
    columns[0].metric(
        "Firing groups",
        f"{len(firing):,}",
        help="An alert group is one (rule, agent, tool). It fires with its first matching "
        "journey and resolves after a quiet period without new ones.",
        border=True,
    )
    columns[1].metric(
        "Notifications",
        f"{data['total']:,}",
        help="One per group and group window, per sink (firing and resolved).",
        border=True,
    )
    columns[2].metric(
        "Pending deliveries", f"{pending:,}", help=DELIVERY_HELP["pending"], border=True
    )
    columns[3].metric("Dead deliveries", f"{dead:,}", help=DELIVERY_HELP["dead"], border=True)
    if firing:
        worst = min(
            firing, key=lambda g: (SEVERITY_ORDER.get(g["severity"], 9), -g["last_event_at"])
        )
        agent = code(worst["agent"]) if worst["agent"] else "any agent"
        where = f"{agent} · {code(worst['tool']) if worst['tool'] else 'any tool'}"
        st.error(
            f"**{plural(len(firing), 'alert group')} firing.** Worst: "
            f"{code(worst['rule'])} ({worst['severity']}) on {where}, last matching journey "
            f"{when(worst['last_event_at'])}. "
            f"[Open its incidents →]({_incidents_link(worst['agent'], worst['tool'])})",
            icon=":material/notifications_active:",
        )
    if dead:
        st.warning(
            f"**{plural(dead, 'notification')} could not be delivered**: "
            f"{'they were' if dead > 1 else 'it was'} given up after max_attempts. Choose "
            "*dead* under Notifications below to see the last error.",
            icon=":material/error:",
        )


def _groups(groups: list[dict[str, Any]]) -> None:
    st.subheader("Alert groups")
    st.caption(
        "One per (rule, agent, tool): firing ones first. Later matches within the group "
        "window go out together in the next notification."
    )
    rows = sorted(
        groups,
        key=lambda g: (
            g["state"] != "firing",
            SEVERITY_ORDER.get(g["severity"], 9),
            -g["last_event_at"],
        ),
    )
    data = pd.DataFrame(
        [
            {
                "state": g["state"] if g["state"] in ("firing", "resolved") else "pending",
                "severity": g["severity"],
                "rule": g["rule"],
                "agent": g["agent"] or "any",
                "tool": g["tool"] or "any",
                "last event": timestamp(g["last_event_at"]),
                "last notified": timestamp(g["last_notified_at"]),
                "first event": timestamp(g["first_event_at"]),
                "incidents": _incidents_link(g["agent"], g["tool"]),
            }
            for g in rows
        ]
    )
    st.dataframe(
        visible_frame(data)
        .style.map(color_by_value(STATE_COLORS), subset=["state"])
        .map(color_by_value(SEVERITY_COLORS), subset=["severity"]),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(data), 420),
        column_config={
            "last event": st.column_config.DatetimeColumn(format="distance"),
            "last notified": st.column_config.DatetimeColumn(format="distance"),
            "first event": st.column_config.DatetimeColumn(format="distance"),
            "incidents": st.column_config.LinkColumn(
                "", display_text="incidents →", help="the Incidents page for this agent and tool"
            ),
        },
    )


def _configuration(rules: list[dict[str, Any]], sinks: list[dict[str, Any]]) -> None:
    st.subheader("Rules and sinks")
    left, right = st.columns([3, 1], gap="large")
    with left:
        st.dataframe(
            visible_frame(
                pd.DataFrame(
                    [
                        {
                            "rule": r["name"],
                            "severity": r["severity"],
                            "alerts on": rule_in_words(r),
                        }
                        for r in rules
                    ]
                )
            ).style.map(color_by_value(SEVERITY_COLORS), subset=["severity"]),
            hide_index=True,
            width="stretch",
            column_config={"alerts on": st.column_config.TextColumn(width="large")},
        )
    with right:
        st.dataframe(
            visible_frame(pd.DataFrame([{"sink": s["name"], "type": s["type"]} for s in sinks])),
            hide_index=True,
            width="stretch",
        )
    st.caption(
        "Set by the collector's `CTXLEDGER_ALERTS_FILE` (checked with "
        "`ctxledger alerts check FILE`); without it, silent, dropped and orphaned journeys "
        "alert to the collector's log. See docs/alerting.md."
    )


def _prometheus() -> None:
    base = api_url()
    st.subheader("Prometheus")
    st.markdown(
        f"The collector also serves [`{base}/metrics`]({base}/metrics): "
        "`ctxledger_journeys_total{verdict, agent, tool}`, "
        "`ctxledger_lost_tokens_total`, `ctxledger_alert_deliveries_total{sink, outcome}`, "
        "`ctxledger_database_up` and the ingest counters. Ready-made alerting rules for "
        f"Prometheus and Alertmanager: [docs/prometheus-alerts.yml]({PROMETHEUS_RULES})."
    )


def _no_alert_yet(data: dict[str, Any]) -> None:
    st.info(
        f"**No alert has fired**: the rules are {_rules_sentence(data['rules'])}; "
        f"notifications go to {_sinks_sentence(data['sinks'])}. To see one fire, send the "
        f"seeds' demo incidents to this collector:\n\n```\nctxledger demo --endpoint "
        f"{api_url()}\n```",
        icon=":material/notifications_off:",
    )


def render() -> None:
    st.title("Alerts")
    st.caption(
        "What the collector's alert rules matched, which notifications went out, how "
        "their delivery went (webhooks, Slack, log), and the spans it rejected."
    )
    data = fetch("alerts", limit=1)
    if data is None:
        st.warning(
            "**This collector has no alerts API** (`/api/v1/alerts`): it predates alerting. "
            "Upgrade it, or alert from Prometheus as below.",
            icon=":material/update:",
        )
        _prometheus()
        return
    if not data["groups"] and not data["total"]:
        _no_alert_yet(data)
    else:
        pending = fetch("alerts", limit=1, delivery="pending")["total"]
        dead = fetch("alerts", limit=1, delivery="dead")["total"]
        _headline(data, pending, dead)
        _groups(data["groups"])
        notification_history(data["rules"])
    rejected_spans()
    _configuration(data["rules"], data["sinks"])
    _prometheus()


live(render)
