"""The spans the collector rejected at ingest: a section of the Alerts page.

Stock OpenTelemetry exporters ignore the ``partial_success`` answer that names rejected
spans, so nobody sees them unless they are shown here (and counted in ``/metrics``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import streamlit as st

from ctxledger_dashboard.alert_style import timestamp
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import api_url, fetch, plural
from ctxledger_dashboard.visible_text import visible_frame

SHOWN = 200


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return visible_frame(
        pd.DataFrame(
            [
                {
                    "rejected": timestamp(r["rejected_at"]),
                    "reason": r["reason"],
                    "service": r["service_name"] or "",
                    "trace id": r["trace_id"],
                    "span id": r["span_id"],
                    "detail": r["detail"],
                    # Collectors before migration 0013 do not say.
                    "on replay": bool(r.get("replayed", False)),
                }
                for r in rows
            ]
        )
    )


def _kept(data: dict[str, Any]) -> str:
    """How long (or how many) the collector keeps them listed."""
    days = float(data.get("max_age_s") or 0) / 86_400
    age = f"each listed for {days:g} day{'s' * (days != 1)}" if days else "listed"
    kept = data.get("kept")
    return age if kept is None else f"{age}, at most the newest {kept:,}"


def rejected_spans() -> None:
    data = fetch("rejections", limit=SHOWN)
    if data is None:  # a collector from before the rejections API
        return
    st.subheader("Rejected spans")
    rows = data["rejections"]
    if not rows:
        st.caption(
            "No span has been rejected: every measurement and manifest the collector "
            "received met the contract and its limits."
        )
        return
    by_reason = Counter(r["reason"] for r in rows)
    reasons = ", ".join(f"{code(reason)} {count:,}" for reason, count in by_reason.most_common())
    shown = f"the newest {len(rows):,} of {data['total']:,}" if data["total"] > len(rows) else ""
    st.warning(
        f"**{plural(data['total'], 'span')} rejected at ingest** ({_kept(data)}). "
        f"By reason{' in ' + shown if shown else ''}: {reasons}. Standard "
        "OpenTelemetry exporters do not report these to the application.",
        icon=":material/block:",
    )
    st.dataframe(
        _table(rows),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(rows), 420),
        column_config={
            "rejected": st.column_config.DatetimeColumn(format="distance"),
            "detail": st.column_config.TextColumn(width="large"),
        },
    )
    base = api_url()
    st.caption(
        f"All of them: [`{base}/api/v1/rejections`]({base}/api/v1/rejections) (pages with "
        "`before=`); counted by reason in `ctxledger_ingest_rejected_spans_total{reason}`. "
        "See docs/collector.md."
    )
