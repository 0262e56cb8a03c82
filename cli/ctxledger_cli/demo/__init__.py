"""Agents that reproduce the seeds' incidents: real loops against the provider stand-in,
on the real clients (seeds 004, 000 and 001 and the dropped result, on ``anthropic`` and
``openai``) and on agent frameworks (``orphaned_call`` on LangGraph, seed 002 on the
OpenAI Agents SDK, ``clean_journeys`` on MCP). No LLM and no network needed.

One module per incident or per kind of agent, :mod:`~ctxledger_cli.demo.incidents` the
catalogue of them (what each runs, the verdict the rules must give each of its tool
calls), :mod:`~ctxledger_cli.demo.runner` what ``ctxledger demo`` does with them.
"""

from ctxledger_cli.demo.incidents import (
    EXPECTED_VERDICTS,
    INCIDENT_CALL_IDS,
    INCIDENTS,
    incident_verdict,
    run_all_incidents,
    skipped_incidents,
)
from ctxledger_cli.demo.real_agents import run_seed_004

__all__ = [
    "EXPECTED_VERDICTS",
    "INCIDENTS",
    "INCIDENT_CALL_IDS",
    "incident_verdict",
    "run_all_incidents",
    "run_seed_004",
    "skipped_incidents",
]
