"""How a request declares that the conversation before it was compacted, and which
compaction: a key equal for every request after the same compaction, different after
the next one, so the collector can tell the first request after it
(:mod:`ctxledger_collector.judge.compaction`).

* ``gen_ai.conversation.compacted`` true on the inference span (the GenAI conventions);
* a ``compaction`` message part (GenAI) or content block (Anthropic's server-side
  compaction), keyed by what it holds;
* Claude Code's summary, the user message its compaction opens the next request with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from ctxledger import semconv as sc

#: How Claude Code opens the first user message after it compacted the conversation.
CLAUDE_CODE_SUMMARY_OPENING: Final = (
    "This session is being continued from a previous conversation that ran out of context."
)
CLAUDE_CODE_SUMMARY: Final = "claude_code.summary"


def compaction_key(kind: str, content: Any) -> str:
    """A compaction named by its kind and a digest of what replaced the history."""
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{kind}:{digest[:16]}"


def claude_code_summary(texts: Iterable[str]) -> str | None:
    """The key of Claude Code's compaction summary among a message's texts, if any."""
    for text in texts:
        if text.lstrip().startswith(CLAUDE_CODE_SUMMARY_OPENING):
            return compaction_key(CLAUDE_CODE_SUMMARY, text)
    return None


def _flagged(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def declared_compaction(
    attributes: Mapping[str, Any], in_messages: Iterable[str | None]
) -> str | None:
    """The compaction a request declares: the first its input messages stand for
    (``Message.compaction`` of each), else the span's ``gen_ai.conversation.compacted``
    (None: nothing declared)."""
    found = next((key for key in in_messages if key is not None), None)
    if found is not None:
        return found
    if _flagged(attributes.get(sc.GEN_AI_CONVERSATION_COMPACTED)):
        return sc.GEN_AI_CONVERSATION_COMPACTED
    return None
