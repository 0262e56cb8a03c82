"""Run: the steps of one run in order, and every tool result's journey through them."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from ctxledger import semconv as sc
from ctxledger.verdicts import VERDICT_MEANINGS, VERDICT_SEVERITY
from ctxledger_dashboard import charts, compaction_notice, runtime_requests, server_read
from ctxledger_dashboard.incident_tables import RUN_COLUMNS, styled
from ctxledger_dashboard.journey_parts import journey_title, result_vanished, stage_table
from ctxledger_dashboard.markdown_text import code, plain
from ctxledger_dashboard.page_kit import (
    TRACE_ID_WIDTH,
    absolute,
    cursor_page,
    empty_state,
    fetch,
    live,
    plural,
    run_link,
    to_newer_page,
    to_older_page,
    when,
)
from ctxledger_dashboard.verdict_style import badge, ordered
from ctxledger_dashboard.visible_text import visible

PAGE_SIZE = 50
TRACE_ID = re.compile(r"[0-9a-f]{32}")


def _choose_run() -> str | None:
    """No run in the URL: the recent runs with their verdicts (one page at a time, from
    the server), each a link, and a picker."""
    page, after = cursor_page("run_picker_pages")
    listing = fetch("runs", limit=PAGE_SIZE, after=after)
    if not listing["runs"]:
        empty_state("runs")
        return None
    st.title("Runs")
    st.caption("Recent runs, newest first: open one to follow its tool results step by step.")
    data = pd.DataFrame(
        [
            {
                "worst": r["worst_verdict"],
                "agent": r["agent_name"] or r["service_name"] or "?",
                "last seen": pd.Timestamp(r["last_seen"], unit="s", tz="UTC"),
                "lost results": r["lost_results"],
                "journeys": r["journeys"],
                "verdicts (journeys)": " · ".join(f"{v} {n:,}" for v, n in ordered(r["verdicts"])),
                "run": run_link(r["trace_id"]),
            }
            for r in listing["runs"]
        ]
    )
    st.dataframe(
        styled(data, "worst"),
        hide_index=True,
        width="stretch",
        column_config={
            "last seen": st.column_config.DatetimeColumn(format="distance"),
            "lost results": st.column_config.NumberColumn(format="localized"),
            "journeys": st.column_config.NumberColumn(format="localized"),
            "run": st.column_config.LinkColumn(
                "run (trace id)", display_text=r"trace_id=([0-9a-f]+)", width=TRACE_ID_WIDTH
            ),
        },
        column_order=RUN_COLUMNS,
    )
    labels = {
        f"{visible(r['agent_name'] or '?')} · {when(r['last_seen'])} · "
        f"worst: {r['worst_verdict']} · {r['trace_id']}": r["trace_id"]
        for r in listing["runs"]
    }
    choice = st.selectbox("Or pick a run", list(labels), index=None, placeholder="recent runs…")
    columns = st.columns([1, 1, 6])
    if page > 0 and columns[0].button("← newer"):
        to_newer_page("run_picker_pages")
        st.rerun()
    next_cursor = listing.get("next_cursor")
    if next_cursor is not None and columns[1].button("older →"):
        to_older_page("run_picker_pages", next_cursor)
        st.rerun()
    return labels[choice] if choice else None


def _journey(journey: dict[str, Any], focused: bool) -> None:
    verdict = journey["verdict"]
    with st.container(border=True):
        st.markdown(
            f"{badge(verdict)} {journey_title(journey)}"
            + (" · :material/my_location: *the journey your link points to*" if focused else "")
        )
        st.caption(VERDICT_MEANINGS.get(verdict, ""))
        if journey.get("first_lost"):
            st.markdown(":material/flag: **First lost here** — this is the loss to fix.")
        elif journey.get("still_missing"):
            step = journey.get("first_lost_step")
            at = f"at step {step}" if step is not None else "earlier"
            target = run_link(st.session_state.run_trace_id, step, journey["tool_call_id"])
            st.markdown(
                f":material/history: **Still missing** in step {journey['step']}: first lost "
                f"{at} ([open →]({target})). The same loss again, counted once."
            )
        where = f" · where: {plain(journey['layer'])}" if journey.get("layer") else ""
        st.caption(f"evidence: {plain(journey.get('source', sc.SOURCE_CTXLEDGER))}{where}")
        if not journey["settled"]:
            st.caption(
                ":material/hourglass_top: waiting for later stages (not judged incomplete yet)"
            )
        if journey["stages"]:
            left, right = st.columns(2)
            missing = result_vanished(journey)
            for column, measure in ((left, "items"), (right, "tokens")):
                chart = charts.stage_funnel(journey["stages"], verdict, measure, missing)
                if chart is not None:
                    column.altair_chart(chart, width="stretch")
        if journey["lost_item_ids"]:
            st.markdown(f"**Lost item ids ({len(journey['lost_item_ids']):,}):**")
            ids = ", ".join(journey["lost_item_ids"])
            st.code(visible(ids), language=None, wrap_lines=True)
        if journey["lost_fields"]:
            st.markdown(
                "**Fields dropped from every item:** "
                + ", ".join(code(name) for name in journey["lost_fields"])
            )
        for transition in journey["transitions"]:
            if transition["verdict"] != sc.VERDICT_INTACT:
                st.markdown(
                    f"- {badge(transition['verdict'])} {code(transition['from_stage'])} → "
                    f"{code(transition['to_stage'])}: "
                    + "; ".join(plain(reason) for reason in transition["reasons"])
                )
        for note in journey["notes"]:
            st.markdown(f"- {plain(note)}")
        if journey["stages"]:
            stage_table(journey["stages"])


def _manifest(manifest: dict[str, Any]) -> None:
    window = manifest["context_window"]
    tokens = manifest["tokens"]
    st.markdown(
        f"**Request** {code(manifest['request_id'])} · model {code(manifest['model'] or '?')} · "
        f"{plural(len(manifest['tool_call_ids']), 'tool result')}, "
        f"{plural(len(manifest['tool_calls'] or []), 'tool call')}"
    )
    if tokens is not None and window:
        used = manifest["window_used"] or 0.0
        st.progress(
            min(used, 1.0),
            text=f"context window: {tokens:,} of {window:,} tokens ({used:.1%}) "
            f"counted with {manifest['tokenizer'] or '?'}",
        )
    elif tokens is not None:
        st.caption(f"{tokens:,} tokens ({manifest['tokenizer'] or '?'}); context window unknown")
    if manifest.get("telemetry_cut"):
        st.warning(
            f"**Not auditable** ({manifest.get('source')}): {manifest['telemetry_cut']}",
            icon=":material/visibility_off:",
        )
    if manifest["calls_without_result"]:
        st.error(
            "**Orphaned tool calls** (call without its result — the provider rejects this "
            "request): " + ", ".join(f"{code(c)}" for c in manifest["calls_without_result"]),
            icon=":material/link_off:",
        )
    if manifest["results_without_call"]:
        st.error(
            "**Results without their call:** "
            + ", ".join(f"{code(c)}" for c in manifest["results_without_call"]),
            icon=":material/link_off:",
        )
    if manifest["sdk_dropped_spans"]:
        st.warning(
            f"The SDK had dropped {plural(manifest['sdk_dropped_spans'], 'measurement')} by "
            "this request: "
            "this run may be missing data.",
            icon=":material/warning:",
        )


def _step(step: dict[str, Any], focus_step: int | None, focus_call: str | None) -> None:
    counts: dict[str, int] = {}
    for request in step["requests"]:
        for journey in request["journeys"]:
            counts[journey["verdict"]] = counts.get(journey["verdict"], 0) + 1
    summary = " ".join(f"{badge(v)} ×{n}" for v, n in ordered(counts))
    label = f"Step {step['step'] if step['step'] is not None else '—'}"
    expanded = step["step"] == focus_step or (
        focus_step is None and step["verdict"] not in (sc.VERDICT_INTACT, sc.VERDICT_DECLARED)
    )
    with st.expander(f"{label} · worst: {step['verdict']}", expanded=expanded):
        st.markdown(summary or "_no tool results in this step_")
        link = absolute(run_link(st.session_state.run_trace_id, step["step"]))
        st.markdown(f":material/link: [Link to this step]({link})")
        for request in step["requests"]:
            if request["manifest"] is not None:
                _manifest(request["manifest"])
                compaction_notice.render(request["manifest"], request["journeys"])
            elif request["request_id"] is None:
                st.markdown("**Before any request** (stages measured as the tool returned)")
            server_read.render(request["request_id"], request["journeys"])
            for journey in sorted(
                request["journeys"],
                key=lambda j: (j["tool_call_id"] != focus_call, -VERDICT_SEVERITY[j["verdict"]]),
            ):
                _journey(journey, focused=journey["tool_call_id"] == focus_call)


def render() -> None:
    params = st.query_params
    asked = (params.get("trace_id") or "").strip()
    trace_id = asked.lower() or _choose_run()
    if not trace_id:
        return
    if not TRACE_ID.fullmatch(trace_id):
        st.warning(
            f"{code(asked)} is not a trace id: a trace id is 32 hex digits "
            "(as in the collector's reports and your tracing backend).",
            icon=":material/search_off:",
        )
        return
    if trace_id != params.get("trace_id"):
        st.query_params["trace_id"] = trace_id
    st.session_state.run_trace_id = trace_id
    run = fetch("run", trace_id)
    if run is None:
        st.warning(
            f"No run with trace id {code(trace_id)} in this collector.",
            icon=":material/search_off:",
        )
        return
    focus_step = int(params["step"]) if params.get("step", "").isdigit() else None
    focus_call = params.get("tool_call_id")

    st.title(f"Run of {plain(run['agent_name'] or '?')}")
    st.caption(
        f"trace {code(run['trace_id'])} · service {code(run['service_name'] or '?')} · "
        f"{when(run['first_seen'])} → {when(run['last_seen'])}"
    )
    columns = st.columns(len(run["verdicts"]) + 1)
    columns[0].metric(
        "lost results",
        f"{run['lost_results']:,}",
        help="tool results lost in this run, each counted once (where it was first lost)",
    )
    for column, (verdict, journeys) in zip(columns[1:], ordered(run["verdicts"]), strict=False):
        column.metric(f"{verdict} journeys", f"{journeys:,}", help=VERDICT_MEANINGS.get(verdict))
    hidden = runtime_requests.shown_by_bodies(run)
    if hidden:
        st.caption(
            f"Claude Code's {plural(len(hidden), 'llm_request span')} carry no messages: the "
            "requests below are shown from its request bodies."
        )
    for step in run["steps"]:
        shown = runtime_requests.without(step, hidden)
        if shown["requests"] or not step["requests"]:
            _step(shown, focus_step, focus_call)


live(render)
