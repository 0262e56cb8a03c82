"""Alerts: not built yet (issue 5). What they will do, and what to alert with today."""

from __future__ import annotations

import streamlit as st

from ctxledger_dashboard.page_kit import api_url, live
from ctxledger_dashboard.verdict_style import MEANINGS, badge

LOSING = ("silent", "dropped", "orphaned")

PROMQL = 'sum by (agent, tool) (ctxledger_journeys{verdict=~"silent|dropped|orphaned"})'

RULE = """groups:
  - name: ctxledger
    rules:
      - alert: ToolResultsLostSilently
        # ctxledger_journeys is a gauge of stored journeys by verdict: a rise means new losses
        expr: >-
          sum by (agent, tool) (
            delta(ctxledger_journeys{verdict=~"silent|dropped|orphaned"}[10m])
          ) > 0
        labels:
          severity: page
        annotations:
          summary: "{{ $labels.agent }} / {{ $labels.tool }}: tool results lost without a marker"
          description: "Open the ctxledger dashboard: Incidents, filtered by agent and tool."
"""

SCRAPE = """scrape_configs:
  - job_name: ctxledger
    static_configs:
      - targets: ["{target}"]   # the collector; metrics at /metrics
"""


def render() -> None:
    st.title("Alerts")
    st.warning(
        "**Alerts are not built yet** (issue 5). This page will show them once they land; "
        "until then, alert from Prometheus as shown below.",
        icon=":material/construction:",
    )

    st.subheader("What alerts will do")
    st.markdown(
        "- **Rules on the verdicts that mislead the model or break the request**:\n"
        + "\n".join(f"  - {badge(v)} {MEANINGS[v]}" for v in LOSING)
        + "\n- scoped by agent and tool, with a threshold and a time window;\n"
        "- delivered to **webhooks and Slack**, each alert carrying the deep link to the run, "
        "step and journey that lost content."
    )

    st.subheader("What works today: Prometheus")
    base = api_url()
    st.markdown(
        f"The collector serves Prometheus metrics at [`{base}/metrics`]({base}/metrics). "
        "`ctxledger_journeys{verdict, agent, tool}` is a gauge of the journeys the collector "
        "holds, by their current verdict (read at scrape time)."
    )
    st.markdown("**Losing journeys by agent and tool** (PromQL):")
    st.code(PROMQL, language="promql")
    st.markdown("**Page when new silent, dropped or orphaned journeys appear** (alerting rule):")
    st.code(RULE, language="yaml")
    target = base.split("://", 1)[-1].split("/", 1)[0]
    st.markdown("**Scrape the collector:**")
    st.code(SCRAPE.format(target=target), language="yaml")
    st.caption(
        "Also exported: `ctxledger_ingest_requests_total{encoding, status}`, "
        "`ctxledger_ingest_spans_total{kind}` (rejected spans mean broken instrumentation) and "
        "`ctxledger_ingest_duration_seconds`."
    )


live(render)
