"""Agents that reproduce the seeds' incidents: real loops on the real clients against the
provider stand-in (seeds 004, 000 and 001, the dropped result), scripted loops (the
others). No LLM and no network needed.

One module per incident, :mod:`~ctxledger_cli.demo.incidents` the catalogue of them
(what each runs, the verdict the rules must find), :mod:`~ctxledger_cli.demo.runner`
what ``ctxledger demo`` does with them.
"""

from ctxledger_cli.demo.incidents import (
    EXPECTED_VERDICTS,
    INCIDENT_CALL_IDS,
    INCIDENTS,
    run_all_incidents,
)
from ctxledger_cli.demo.real_agents import run_seed_004

__all__ = [
    "EXPECTED_VERDICTS",
    "INCIDENTS",
    "INCIDENT_CALL_IDS",
    "run_all_incidents",
    "run_seed_004",
]
