"""The Tool page's recent losses: every journey of the tool that was not intact, newest
first, each linked to where its result was first lost."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ctxledger import semconv as sc
from ctxledger_dashboard.incident_tables import link_step, loss_note, styled
from ctxledger_dashboard.page_kit import TRACE_ID_WIDTH, loss_columns, run_link


def _what_was_lost(report: dict[str, Any]) -> str:
    for transition in report["transitions"]:
        if transition["verdict"] != sc.VERDICT_INTACT:
            reasons = "; ".join(transition["reasons"])
            return f"{transition['from_stage']} → {transition['to_stage']}: {reasons}"
    return "; ".join(report["notes"])


def _lost_ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:4])
    return f"{shown}, … ({len(ids)})" if len(ids) > 4 else shown


def recent_losses(reports: list[dict[str, Any]]) -> None:
    st.subheader("Recent losses")
    st.caption("Every journey of this tool that was not intact, newest first.")
    if not reports:
        st.success("No losses in this window.", icon=":material/check_circle:")
        return
    data = pd.DataFrame(
        [
            {
                "verdict": r["verdict"],
                "seen": pd.Timestamp(r["last_observed_at"], unit="s", tz="UTC"),
                "agent": r["agent_name"] or "?",
                "loss": loss_note(r),
                "lost items": r["lost_items"],
                "lost tokens": r["lost_tokens"],
                "what was lost": _what_was_lost(r),
                "lost ids": _lost_ids(r["lost_item_ids"]),
                "journey": run_link(r["trace_id"], link_step(r), r["tool_call_id"]),
                "step link": run_link(r["trace_id"], r["step"]) if r["step"] is not None else "",
                "run (trace id)": run_link(r["trace_id"]),
            }
            for r in reports
        ]
    )
    st.dataframe(
        styled(data, "verdict"),
        hide_index=True,
        width="stretch",
        column_config={
            **loss_columns(),
            "journey": st.column_config.LinkColumn(
                display_text="open →", help="where the result was first lost"
            ),
            "step link": st.column_config.LinkColumn("step", display_text=r"step=(\d+)"),
            "run (trace id)": st.column_config.LinkColumn(
                display_text=r"trace_id=([0-9a-f]+)", width=TRACE_ID_WIDTH
            ),
            "what was lost": st.column_config.TextColumn(width="large"),
        },
        column_order=[
            "verdict",
            "seen",
            "agent",
            "loss",
            "lost items",
            "lost tokens",
            "journey",
            "step link",
            "run (trace id)",
            "lost ids",
            "what was lost",
        ],
    )
