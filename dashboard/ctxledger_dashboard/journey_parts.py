"""The parts of one journey on the Run page: its title, its stage table, and whether its
result vanished from its request."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ctxledger import semconv as sc
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import count
from ctxledger_dashboard.visible_text import visible_frame


def journey_title(journey: dict[str, Any]) -> str:
    stages = journey["stages"]
    first_items = next((s["items"] for s in stages if s["items"] is not None), None)
    lost = ""
    if journey["lost_items"]:
        of = f" of {first_items:,}" if first_items is not None else ""
        lost = f" — lost {journey['lost_items']:,}{of} items"
    elif journey["lost_tokens"]:
        lost = f" — lost {journey['lost_tokens']:,} tokens"
    tool = code(journey["tool_name"]) if journey["tool_name"] is not None else "?"
    return f"{tool} · {code(journey['tool_call_id'])}{lost}"


def result_vanished(journey: dict[str, Any]) -> bool:
    """The result is missing from the journey's request (dropped, or its call sent
    without it): none of its stages was measured in that request."""
    request = journey.get("request_id")
    return (
        journey["verdict"] in (sc.VERDICT_DROPPED, sc.VERDICT_ORPHANED)
        and request is not None
        and all(s["request_id"] != request for s in journey["stages"])
    )


def _yes_no(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


def stage_table(stages: list[dict[str, Any]]) -> None:
    """The stages, every cell text: counts with thousands separators, "—" where a stage
    did not measure it. JSON chars (whitespace and escaping left out) are what a
    transition's "JSON chars fell by" compares, so they are shown when measured."""
    json_chars = any(s.get("canonical_chars") is not None for s in stages)
    rows = pd.DataFrame(
        [
            {
                "stage": s["stage"],
                "items": count(s["items"]),
                "chars": count(s["chars"]),
                **({"JSON chars": count(s.get("canonical_chars"))} if json_chars else {}),
                "tokens": count(s["tokens"]),
                "tokenizer": s["tokenizer"] + (" (estimated)" if s["tokens_estimated"] else "")
                if s["tokenizer"]
                else "—",
                "JSON": _yes_no(s["json_valid"]),
                "declared": s["strategy"] or ("yes" if s["declared"] else ""),
                "marker": ", ".join(s["markers_found"]) or ("yes" if s["marker"] else ""),
                "ref": s["ref"] or "",
            }
            for s in stages
        ]
    )
    st.dataframe(
        visible_frame(rows),
        hide_index=True,
        width="stretch",
        column_config={
            "JSON chars": st.column_config.TextColumn(
                help="chars of the JSON content without whitespace or escaping: what the "
                "verdict compares, so re-formatting is not counted as loss"
            )
        },
    )
