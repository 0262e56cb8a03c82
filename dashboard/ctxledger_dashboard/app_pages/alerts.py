"""Alerts: which alert groups fire, every notification and how its delivery went, the rules
and sinks the collector runs with, and a pointer to the Prometheus rules."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ctxledger.verdicts import ALERT_SEVERITIES
from ctxledger_dashboard.incident_tables import PAGE_SIZE, page_controls
from ctxledger_dashboard.page_kit import api_url, fetch, live, run_link, when
from ctxledger_dashboard.verdict_style import badge

ANY = "any"
DELIVERIES = (ANY, "pending", "delivered", "dead")
DELIVERY_HELP = {
    "pending": "not delivered yet: first attempt due, or retrying with backoff",
    "delivered": "the sink accepted it",
    "dead": "given up after max_attempts (or its sink is no longer configured)",
}
#: Most severe first: critical 0, warning 1, info 2.
SEVERITY_ORDER = {severity: rank for rank, severity in enumerate(reversed(ALERT_SEVERITIES))}
STATE_COLORS = {"firing": "#c62828", "resolved": "#2e7d32", "pending": "#9e9e9e"}
DELIVERY_COLORS = {"dead": "#c62828", "pending": "#f9a825", "delivered": "#2e7d32"}
SEVERITY_COLORS = {"critical": "#c62828", "warning": "#f9a825", "info": "#1565c0"}
PROMETHEUS_RULES = "https://github.com/ctxledger/ctxledger/blob/main/docs/prometheus-alerts.yml"


def _conditions(rule: dict[str, Any]) -> str:
    """A rule in words: 'silent, dropped or orphaned journeys (agent x)'."""
    what = []
    if rule["verdicts"]:
        verdicts = list(rule["verdicts"])
        listed = (
            verdicts[0] if len(verdicts) == 1 else f"{', '.join(verdicts[:-1])} or {verdicts[-1]}"
        )
        what.append(f"{listed} journeys")
    if rule.get("min_lost_token_share") is not None:
        what.append(f"more than {rule['min_lost_token_share'] * 100:g}% of a result's tokens lost")
    if rule.get("must_keep_lost"):
        what.append("must-keep items lost")
    scope = []
    if rule["agents"]:
        scope.append(f"agent {' or '.join(rule['agents'])}")
    if rule["tools"]:
        scope.append(f"tool {' or '.join(rule['tools'])}")
    text = " with ".join(what)
    return f"{text} ({', '.join(scope)})" if scope else text


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _rules_sentence(rules: list[dict[str, Any]]) -> str:
    return "; ".join(f"`{r['name']}`: {_conditions(r)} ({r['severity']})" for r in rules)


def _sinks_sentence(sinks: list[dict[str, Any]]) -> str:
    return ", ".join(f"`{s['name']}` ({s['type']})" for s in sinks)


def _color(colors: dict[str, str]) -> Any:
    def style(value: Any) -> str:
        color = colors.get(str(value))
        return f"color: {color}; font-weight: 600" if color else ""

    return style


def _time(seconds: float | None) -> Any:
    return pd.Timestamp(seconds, unit="s", tz="UTC") if seconds is not None else pd.NaT


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
        where = f"{worst['agent'] or 'any agent'} · {worst['tool'] or 'any tool'}"
        st.error(
            f"**{_plural(len(firing), 'alert group')} firing.** Worst: "
            f"`{worst['rule']}` ({worst['severity']}) on {where}, last matching journey "
            f"{when(worst['last_event_at'])}. "
            f"[Open its incidents →]({_incidents_link(worst['agent'], worst['tool'])})",
            icon=":material/notifications_active:",
        )
    if dead:
        st.warning(
            f"**{_plural(dead, 'notification')} could not be delivered**: "
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
                "last event": _time(g["last_event_at"]),
                "last notified": _time(g["last_notified_at"]),
                "first event": _time(g["first_event_at"]),
                "incidents": _incidents_link(g["agent"], g["tool"]),
            }
            for g in rows
        ]
    )
    st.dataframe(
        data.style.map(_color(STATE_COLORS), subset=["state"]).map(
            _color(SEVERITY_COLORS), subset=["severity"]
        ),
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


def _history(rules: list[dict[str, Any]]) -> None:
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
                "sent": _time(n["created_at"]),
                "status": n["status"],
                "rule": n["rule"],
                "agent · tool": f"{n['agent'] or 'any'} · {n['tool'] or 'any'}",
                "journeys": n["payload"].get("count") if n["status"] == "firing" else None,
                "worst example": _worst_example(n),
                "sink": f"{n['sink']} ({n['sink_type']})",
                "delivery": _delivery(n),
                "attempts": n["attempts"],
                "last error": n["last_error"] or "",
            }
            for n in notifications
        ]
    )
    st.dataframe(
        data.style.map(_color(STATE_COLORS), subset=["status"]).map(
            lambda v: _color(DELIVERY_COLORS)(str(v).split(" ")[0]), subset=["delivery"]
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "sent": st.column_config.DatetimeColumn(format="distance"),
            "delivery": st.column_config.TextColumn(
                help="; ".join(f"{k}: {v}" for k, v in DELIVERY_HELP.items())
            ),
            "last error": st.column_config.TextColumn(width="medium"),
            "worst example": st.column_config.LinkColumn(
                display_text=r"tool_call_id=(.+)$", help="the worst matching journey, in its run"
            ),
        },
    )
    page_controls(key, listing["total"], len(notifications), listing["next_offset"])
    _details(notifications)


def _details(notifications: list[dict[str, Any]]) -> None:
    """One notification of the page: its delivery and every example, with links."""
    by_id = {n["id"]: n for n in notifications}
    chosen = st.selectbox(
        "Open a notification",
        list(by_id),
        format_func=lambda i: (
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
            f"**{n['status']}** · `{n['rule']}` ({payload.get('severity')}) · "
            f"window {when(window.get('start'))} → {when(window.get('end'))}  \n"
            f"Sink `{n['sink']}` ({n['sink_type']}): **{n['delivery']}** after "
            f"{_plural(n['attempts'], 'attempt')}"
            + (f", delivered {when(n['delivered_at'])}" if n["delivered_at"] else "")
            + (f", next attempt {when(n['next_attempt_at'])}" if n["next_attempt_at"] else "")
        )
        if n["last_error"]:
            st.error(f"Last error: {n['last_error']}", icon=":material/error:")
        examples = payload.get("examples") or []
        if examples:
            st.markdown(
                f"**{_plural(payload.get('count', 0), 'matching journey')}**, "
                f"{payload.get('lost_items', 0):,} items and {payload.get('lost_tokens', 0):,} "
                "tokens lost. Worst examples:\n\n"
                + "\n".join(
                    f"- {badge(e['verdict'])} [`{e['tool_call_id']}` step {e['step']}]"
                    f"({run_link(e['trace_id'], e['step'], e['tool_call_id'])}): lost "
                    f"{e['lost_items']:,} items, {e['lost_tokens']:,} tokens"
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
            f"webhook-id `{n['webhook_id']}` (the same on every retry: receivers drop "
            f"duplicates by it) · batch `{n['batch_id']}`"
        )
        with st.expander("Payload (JSON, as sent to webhooks)", icon=":material/data_object:"):
            st.json(payload, expanded=2)


def _configuration(rules: list[dict[str, Any]], sinks: list[dict[str, Any]]) -> None:
    st.subheader("Rules and sinks")
    left, right = st.columns([3, 1], gap="large")
    with left:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "rule": r["name"],
                        "severity": r["severity"],
                        "alerts on": _conditions(r),
                    }
                    for r in rules
                ]
            ).style.map(_color(SEVERITY_COLORS), subset=["severity"]),
            hide_index=True,
            width="stretch",
            column_config={"alerts on": st.column_config.TextColumn(width="large")},
        )
    with right:
        st.dataframe(
            pd.DataFrame([{"sink": s["name"], "type": s["type"]} for s in sinks]),
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
        "What the collector's alert rules matched, which notifications went out, and how "
        "their delivery went (webhooks, Slack, log)."
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
        _history(data["rules"])
    _configuration(data["rules"], data["sinks"])
    _prometheus()


live(render)
