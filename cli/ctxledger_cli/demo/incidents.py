"""The catalogue of the demo's incidents: what each one runs and the verdict the rules
must give each of its tool calls. :func:`run_all_incidents` runs them all, each in its
own trace.

Every incident is a real agent loop against a provider stand-in started for it: seeds
004, 000 and 001 (its emergency trim and its naive trim) and ``dropped_result`` on the
``anthropic`` and ``openai`` clients (:mod:`.real_agents`); ``orphaned_call``,
``seed_002_log_clip`` and ``clean_journeys`` on LangGraph, the OpenAI Agents SDK and MCP
(:mod:`.framework_agents`), skipped when their framework is not installed; and
``ollama_window``, a model server that discards the front of an over-long prompt.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxledger.verdicts import worst
from ctxledger_cli.demo.dropped_result import DROP_CALL_IDS
from ctxledger_cli.demo.framework_agents import (
    CLEAN_CALL_IDS,
    ORPHAN_CUSTOMER_CALL_ID,
    ORPHAN_ORDERS_CALL_ID,
    clean_journeys,
    load_framework_agents,
    missing_framework,
    orphaned_call,
    seed_002_log_clip,
)
from ctxledger_cli.demo.real_agents import (
    WINDOW_CALL_IDS,
    dropped_result,
    load_agents,
    ollama_window,
    run_seed_004,
    seed_000_first_rows,
    seed_001_emergency_trim,
    seed_001_naive_trim,
)
from ctxledger_cli.demo.seed_000_first_rows import ORDERS_CALL_ID
from ctxledger_cli.demo.seed_001_context_overflow import NAIVE_TRIM_CALL_IDS, TRIM_CALL_IDS
from ctxledger_cli.demo.seed_002_log_clip import LOG_CALL_ID
from ctxledger_cli.demo.seed_004_silent_loss import LOOKUP_CALL_ID, SEARCH_CALL_ID

#: Incident name -> {every tool call id the incident issues: the verdict the rules must
#: give it}. A call travels in several requests, one journey each; its verdict is the
#: worst of its journeys. Call ids are fixed and unique across incidents: look each one
#: up in ``/api/v1/reports`` by its id.
EXPECTED_VERDICTS: dict[str, dict[str, str]] = {
    "seed_004_silent_loss": {SEARCH_CALL_ID: "silent", LOOKUP_CALL_ID: "intact"},
    "seed_002_log_clip": {LOG_CALL_ID: "declared"},
    "seed_000_first_rows": {ORDERS_CALL_ID: "unmarked"},
    "seed_001_emergency_trim": {
        TRIM_CALL_IDS[0]: "declared",
        **dict.fromkeys(TRIM_CALL_IDS[1:], "intact"),
    },
    "seed_001_naive_trim": {
        NAIVE_TRIM_CALL_IDS[0]: "orphaned",
        **dict.fromkeys(NAIVE_TRIM_CALL_IDS[1:], "intact"),
    },
    "orphaned_call": {ORPHAN_ORDERS_CALL_ID: "dropped", ORPHAN_CUSTOMER_CALL_ID: "orphaned"},
    "dropped_result": {DROP_CALL_IDS[0]: "dropped", **dict.fromkeys(DROP_CALL_IDS[1:], "intact")},
    "clean_journeys": dict.fromkeys(CLEAN_CALL_IDS, "intact"),
    "ollama_window": {WINDOW_CALL_IDS[0]: "dropped", WINDOW_CALL_IDS[1]: "intact"},
}

#: Incident name -> every tool call id the incident issues (its run's journeys).
INCIDENT_CALL_IDS: dict[str, tuple[str, ...]] = {
    name: tuple(calls) for name, calls in EXPECTED_VERDICTS.items()
}

#: Incident name -> the function that runs it as one agent run (one trace); each takes an
#: optional model.
INCIDENTS: dict[str, Callable[..., None]] = {
    "seed_004_silent_loss": run_seed_004,
    "seed_002_log_clip": seed_002_log_clip,
    "seed_000_first_rows": seed_000_first_rows,
    "seed_001_emergency_trim": seed_001_emergency_trim,
    "seed_001_naive_trim": seed_001_naive_trim,
    "orphaned_call": orphaned_call,
    "dropped_result": dropped_result,
    "clean_journeys": clean_journeys,
    "ollama_window": ollama_window,
}


def incident_verdict(name: str) -> str:
    """The worst verdict the rules must give a call of incident ``name``."""
    return worst(EXPECTED_VERDICTS[name].values())


def skipped_incidents() -> dict[str, str]:
    """Incident name -> why it cannot run here (its framework is not installed)."""
    reasons = {name: missing_framework(name) for name in INCIDENTS}
    return {name: reason for name, reason in reasons.items() if reason is not None}


def run_all_incidents(model: str | None = None) -> dict[str, dict[str, str]]:
    """Run every incident that can run here (see :func:`skipped_incidents`), each in its
    own trace (``model`` for all of them, else each its own); return the expectations of
    those that ran (incident name -> {call id: verdict}, see :data:`EXPECTED_VERDICTS`)."""
    skipped = skipped_incidents()
    load_agents()
    load_framework_agents()
    ran: dict[str, dict[str, str]] = {}
    for name, incident in INCIDENTS.items():
        if name in skipped:
            continue
        if model is None:
            incident()
        else:
            incident(model)
        ran[name] = dict(EXPECTED_VERDICTS[name])
    return ran
