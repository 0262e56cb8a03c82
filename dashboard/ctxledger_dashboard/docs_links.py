"""Links into the project's documentation, as a user opens them: the docs on the
project's repository (the ``Documentation`` URL of the package)."""

from __future__ import annotations

from ctxledger import semconv as sc

DOCS_URL = "https://github.com/ctxledger/ctxledger/blob/main/docs"

#: The section of docs/remedies.md with the fix for a loss at each stage (GitHub's
#: heading anchors). A cut inside a message is a framework setting or your own code
#: cutting silently; a result or call leaving the request is history trimming.
REMEDY_OF_STAGE: dict[str, str] = {
    sc.STAGE_SERIALIZED: "one-decorator-per-tool-govern",
    sc.STAGE_ASSEMBLED: "framework-settings-that-truncate-silently-seed-004",
    sc.STAGE_SENT: "framework-settings-that-truncate-silently-seed-004",
    sc.STAGE_LLM_INPUT: "framework-settings-that-truncate-silently-seed-004",
    "request": "context_length_exceeded-emergency_trim",
    sc.STAGE_RECEIVED: "model-servers-that-discard-silently-stage-received",
}
#: Where the remedies start: which one to choose.
REMEDY_CHOICE = "which-one-the-decision-order-seed-002"


def docs_link(page: str, anchor: str | None = None) -> str:
    """The address of ``docs/<page>`` (and a heading in it) on the project's repository."""
    return f"{DOCS_URL}/{page}" + (f"#{anchor}" if anchor else "")


def remedy_link(stage: str) -> str:
    """docs/remedies.md at the remedy for a loss at ``stage`` (its first section, which
    says which remedy to choose, for a stage without one)."""
    return docs_link("remedies.md", REMEDY_OF_STAGE.get(stage, REMEDY_CHOICE))
