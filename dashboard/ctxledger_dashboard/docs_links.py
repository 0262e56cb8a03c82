"""Links into the project's documentation: the dashboard's own Guide page, which reads the
docs from this install (no internet access needed), at the section a GitHub anchor names
(the same anchor as on the project's repository, ``PUBLIC_DOCS_URL``)."""

from __future__ import annotations

from ctxledger import semconv as sc
from ctxledger_dashboard.guide_docs import guide_link

#: The same docs on the project's repository (the ``Documentation`` URL of the package).
PUBLIC_DOCS_URL = "https://github.com/ctxledger/ctxledger/blob/main/docs"

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
    """The Guide page's address of ``docs/<page>`` (and a section of it)."""
    return guide_link(page, anchor)


def remedy_link(stage: str) -> str:
    """docs/remedies.md at the remedy for a loss at ``stage`` (its first section, which
    says which remedy to choose, for a stage without one)."""
    return docs_link("remedies.md", REMEDY_OF_STAGE.get(stage, REMEDY_CHOICE))
