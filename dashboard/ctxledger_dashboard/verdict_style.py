"""How verdicts look: one colour each, used on every page. What each verdict means is
:data:`ctxledger.verdicts.VERDICT_MEANINGS`."""

from __future__ import annotations

from ctxledger import semconv as sc
from ctxledger.verdicts import LAYERS, OTHER_LAYER, VERDICT_SEVERITY, VERDICTS

COLORS: dict[str, str] = {
    sc.VERDICT_INTACT: "#2e7d32",
    sc.VERDICT_DECLARED: "#1565c0",
    sc.VERDICT_INCOMPLETE: "#9e9e9e",
    sc.VERDICT_UNAUDITABLE: "#607d8b",
    sc.VERDICT_UNMARKED: "#f9a825",
    sc.VERDICT_SILENT: "#c62828",
    sc.VERDICT_DROPPED: "#6a1b9a",
    sc.VERDICT_ORPHANED: "#e65100",
}

#: Which layer to look at when a stage loses content (the issue's "right layer").
LAYER_OF_STAGE: dict[str, str] = {
    sc.STAGE_SERIALIZED: "the serializer (tool result → text)",
    sc.STAGE_ASSEMBLED: "the context manager (text → messages array)",
    sc.STAGE_SENT: "the HTTP layer / gateway (messages → request body)",
    sc.STAGE_LLM_INPUT: "the context manager or gateway (tool output → the request, as the "
    "LLM span recorded it)",
    "request": "history trimming (a result or its call left the request)",
    sc.STAGE_RECEIVED: "the model server (it read fewer tokens than were sent: its context "
    "window, truncation or context editing)",
}


#: The layer filter's choices: the short layer names (``ctxledger.verdicts.LAYERS``, as the
#: API's ``layer`` parameter and alert rules take them) in words, in pipeline order.
LAYER_LABELS: dict[str, str] = {
    "serialization": "serialization (tool result → text)",
    "context_assembly": "context assembly (text → messages)",
    "wire": "the wire (HTTP client, middleware, gateway)",
    "before_request": "before the request (zero-SDK traces)",
    "request": "history trimming (a result or call left the request)",
    "model_server": "the model server (read fewer tokens than sent)",
    "telemetry": "the telemetry (not auditable)",
    OTHER_LAYER: "between custom stages",
}


def ordered(verdicts: dict[str, int]) -> list[tuple[str, int]]:
    """Verdict counts, worst first."""
    return sorted(verdicts.items(), key=lambda kv: -VERDICT_SEVERITY.get(kv[0], 0))


def badge(verdict: str) -> str:
    """A coloured label for st.markdown."""
    return f":{_streamlit_color(verdict)}-background[**{verdict}**]"


def _streamlit_color(verdict: str) -> str:
    return {
        sc.VERDICT_INTACT: "green",
        sc.VERDICT_DECLARED: "blue",
        sc.VERDICT_INCOMPLETE: "gray",
        sc.VERDICT_UNAUDITABLE: "gray",
        sc.VERDICT_UNMARKED: "orange",
        sc.VERDICT_SILENT: "red",
        sc.VERDICT_DROPPED: "violet",
        sc.VERDICT_ORPHANED: "orange",
    }.get(verdict, "gray")


assert set(LAYER_LABELS) == {*LAYERS, OTHER_LAYER}, "a layer without its label"

__all__ = ["COLORS", "LAYER_LABELS", "LAYER_OF_STAGE", "VERDICTS", "badge", "ordered"]
