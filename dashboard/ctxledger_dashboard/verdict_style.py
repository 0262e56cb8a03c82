"""How verdicts look: one colour and one plain-language line each, used on every page."""

from __future__ import annotations

from ctxledger.verdicts import VERDICT_SEVERITY, VERDICTS

COLORS: dict[str, str] = {
    "intact": "#2e7d32",
    "declared": "#1565c0",
    "incomplete": "#9e9e9e",
    "unmarked": "#f9a825",
    "silent": "#c62828",
    "dropped": "#6a1b9a",
    "orphaned": "#e65100",
}

MEANINGS: dict[str, str] = {
    "intact": "nothing was lost between stages",
    "declared": "content was lost and the model sees a marker that says so",
    "unmarked": "lost and declared in telemetry, but the model sees no marker",
    "silent": "lost and nobody said so: the model takes the part for the whole",
    "dropped": "the whole result vanished from a request",
    "orphaned": "a tool call without its result, or a result without its call",
    "incomplete": "later stages never arrived within the grace period",
}

#: Which layer to look at when a stage loses content (the issue's "right layer").
LAYER_OF_STAGE: dict[str, str] = {
    "serialized": "the serializer (tool result → text)",
    "assembled": "the context manager (text → messages array)",
    "sent": "the HTTP layer / gateway (messages → request body)",
    "request": "history trimming (a result or its call left the request)",
}


def ordered(verdicts: dict[str, int]) -> list[tuple[str, int]]:
    """Verdict counts, worst first."""
    return sorted(verdicts.items(), key=lambda kv: -VERDICT_SEVERITY.get(kv[0], 0))


def badge(verdict: str) -> str:
    """A coloured label for st.markdown."""
    return f":{_streamlit_color(verdict)}-background[**{verdict}**]"


def _streamlit_color(verdict: str) -> str:
    return {
        "intact": "green",
        "declared": "blue",
        "incomplete": "gray",
        "unmarked": "orange",
        "silent": "red",
        "dropped": "violet",
        "orphaned": "orange",
    }.get(verdict, "gray")


__all__ = ["COLORS", "LAYER_OF_STAGE", "MEANINGS", "VERDICTS", "badge", "ordered"]
