"""The Run page's model-server panel for one request: the tokens sent against the tokens
the server says it read (stage ``received``), which tool results fell out there, and the
server's setting that stops it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from ctxledger import semconv as sc
from ctxledger_dashboard.docs_links import remedy_link
from ctxledger_dashboard.markdown_text import code, plain
from ctxledger_dashboard.verdict_style import COLORS, LAYER_OF_STAGE, badge

#: Received outcomes where the result (or part of it) did not reach the model.
FELL_OUT = ("dropped", "cut", "cleared")

#: Per server policy (``ctxledger.received.policy``): what it does, and its fix.
FIX_OF_POLICY: dict[str | None, str] = {
    sc.POLICY_FRONT_DISCARD: "The server discards the oldest messages of a prompt longer "
    'than its window and answers 200 (ollama\'s way). Raise the window: `options={"num_ctx": '
    "N}` per request, `OLLAMA_CONTEXT_LENGTH` on the server or `PARAMETER num_ctx` in the "
    "Modelfile; or send `truncate: false` so ollama refuses an over-long prompt instead.",
    sc.POLICY_TOKEN_TRUNCATE: "The server kept the first `n_keep` tokens and the tail "
    "(llama.cpp's older `llama-server`). Start it with `--ctx-size N` large enough for the "
    "request; current versions refuse an over-long prompt, which is the safe behaviour.",
    sc.POLICY_MIDDLE_DISCARD: "The server (or a compacting proxy in front of it) dropped the "
    "middle of the prompt (LM Studio's `truncateMiddle`). Set its context overflow policy "
    "to `stopAtLimit`, or load the model with a larger context length.",
    sc.POLICY_PROVIDER_EDIT: "The provider's context editing cleared older tool results "
    "(Anthropic's `clear_tool_uses`). Leave `context_management` out, raise its `trigger` "
    "or `keep`, or list the tools whose results must stay in `exclude_tools`.",
    sc.POLICY_REFUSE: "This server refuses an over-long prompt rather than cutting it, so "
    "something in front of it read less: on the Responses API set "
    '`truncation="disabled"`; behind a gateway, check its context settings.',
    None: "The server's policy is unknown. Give it a window that holds the request (its "
    "context-size setting: ollama's `num_ctx`, llama.cpp's `--ctx-size`, vLLM's "
    "`--max-model-len`).",
}
AGENT_SIDE_FIX = (
    "Or keep each request under the window in the agent: "
    "`ctxledger.remedies.emergency_trim(messages, target_tokens=...)` cuts what it must "
    "and declares it, so nothing reaches a server that would cut silently."
)


@dataclass(frozen=True)
class ServerRead:
    """What the server said it read of one request, and the results that fell out."""

    sent: int
    read: int
    tokenizer: str | None
    exact: bool | None
    policy: str | None
    fell_out: list[dict[str, Any]]

    @property
    def shortfall(self) -> int:
        return max(self.sent - self.read, 0)


def server_read(request_id: str | None, journeys: list[dict[str, Any]]) -> ServerRead | None:
    """The ``received`` stages of the request's journeys (one per tool result, all with the
    request's counts); None when the server's answer gave no count for this request."""
    counted: tuple[dict[str, Any], dict[str, Any]] | None = None
    fell_out: list[dict[str, Any]] = []
    for journey in journeys:
        for stage in journey["stages"]:
            received = stage.get("received")
            if stage["stage"] != sc.STAGE_RECEIVED or received is None:
                continue
            if stage["request_id"] != request_id:
                continue
            if received["outcome"] in FELL_OUT:
                fell_out.append({**received, "journey": journey})
            if counted is None and received["input_tokens"] is not None:
                counted = (stage, received)
    if counted is None:
        return None
    stage, received = counted
    return ServerRead(
        sent=received["counted_tokens"] or 0,
        read=received["input_tokens"],
        tokenizer=stage.get("tokenizer"),
        exact=received["exact"],
        policy=received["policy"],
        fell_out=fell_out,
    )


def _chart(read: ServerRead, verdict: str) -> Any:
    """Two bars: the tokens sent, and the tokens read with the shortfall beside them."""
    rows = [
        {"bar": "sent (counted)", "part": "sent", "tokens": read.sent},
        {"bar": "read by the server", "part": "read", "tokens": read.read},
    ]
    if read.shortfall:
        rows.append({"bar": "read by the server", "part": "not read", "tokens": read.shortfall})
    scale = alt.Scale(
        domain=["sent", "read", "not read"],
        range=["#90a4ae", "#546e7a", COLORS.get(verdict, "#c62828")],
    )
    return (
        alt.Chart(pd.DataFrame(rows), title="tokens: sent vs read by the model server")
        .mark_bar()
        .encode(
            y=alt.Y("bar:N", sort=["sent (counted)", "read by the server"], title=None),
            x=alt.X("sum(tokens):Q", title="input tokens"),
            color=alt.Color("part:N", scale=scale, legend=alt.Legend(orient="bottom", title=None)),
            order=alt.Order("part:N", sort="ascending"),
            tooltip=["bar", "part", alt.Tooltip("tokens:Q", format=",")],
        )
        .properties(height=alt.Step(26))
    )


def _counted_with(read: ServerRead) -> str:
    if read.tokenizer is None:
        return ""
    how = "exact" if read.exact else "approximate"
    return f" (counted with {code(read.tokenizer)}, {how})"


def render(request_id: str | None, journeys: list[dict[str, Any]]) -> None:
    """The panel, when the server reported what it read of this request."""
    read = server_read(request_id, journeys)
    if read is None:
        return
    if not read.fell_out:
        st.caption(
            f":material/dns: The model server read {read.read:,} input tokens; "
            f"{read.sent:,} were sent{_counted_with(read)}: every tool result reached it."
        )
        return
    worst = max(read.fell_out, key=lambda r: r["lost_tokens"])["journey"]["verdict"]
    with st.container(border=True):
        share = read.read / read.sent if read.sent else 1.0
        st.markdown(
            f":material/dns: **The model server read {read.read:,} of the {read.sent:,} "
            f"tokens sent** ({share:.0%}){_counted_with(read)}. Where: "
            f"**{LAYER_OF_STAGE[sc.STAGE_RECEIVED]}**."
        )
        st.altair_chart(_chart(read, worst), width="stretch")
        st.markdown("**Fell out at the server:**")
        for lost in read.fell_out:
            journey = lost["journey"]
            tool = code(journey["tool_name"]) if journey["tool_name"] else "?"
            st.markdown(
                f"- {badge(journey['verdict'])} {tool} · {code(journey['tool_call_id'])}: "
                f"{plain(lost['outcome'])}, {lost['lost_tokens']:,} tokens not read"
            )
        policy = f"policy {code(read.policy)}" if read.policy else "policy unknown"
        st.markdown(
            f"**Fix** ({policy}): {FIX_OF_POLICY.get(read.policy, FIX_OF_POLICY[None])} "
            f"{AGENT_SIDE_FIX} [Remedies →]({remedy_link(sc.STAGE_RECEIVED)})"
        )
