"""Scripted agents that reproduce the seeds' incidents. No LLM and no network needed.

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
from ctxledger_cli.demo.seed_004_silent_loss import run_seed_004

__all__ = [
    "EXPECTED_VERDICTS",
    "INCIDENTS",
    "INCIDENT_CALL_IDS",
    "run_all_incidents",
    "run_seed_004",
]
