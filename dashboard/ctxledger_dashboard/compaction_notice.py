"""The notice on the first request after a compaction a runtime declared (Claude Code's
summary, a GenAI ``compaction`` part or flag): which results its summary replaced. Each
is a journey below, declared, its last stage ``compacted``."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ctxledger import semconv as sc
from ctxledger.verdicts.compaction import declared_by
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import plural


def replaced_results(journeys: list[dict[str, Any]]) -> list[str]:
    """The calls whose result a compaction replaced in this request."""
    return [
        j["tool_call_id"]
        for j in journeys
        if j["stages"] and j["stages"][-1]["stage"] == sc.STAGE_COMPACTED
    ]


def render(manifest: dict[str, Any], journeys: list[dict[str, Any]]) -> None:
    replaced = replaced_results(journeys)
    if not manifest.get("compaction") or not replaced:
        return
    st.info(
        f"**First request after a compaction** ({declared_by(manifest['compaction'])}): "
        f"{plural(len(replaced), 'tool result')} the request before it carried "
        f"{'is' if len(replaced) == 1 else 'are'} replaced by the summary: "
        + ", ".join(code(call) for call in replaced),
        icon=":material/compress:",
    )
