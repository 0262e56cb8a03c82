"""The catalogue of scripted incidents: what each one runs and the verdict the rules
must give it. :func:`run_all_incidents` runs them all, each in its own trace."""

from __future__ import annotations

from collections.abc import Callable

from ctxledger_cli.demo.clean_journeys import CLEAN_CALL_IDS, clean_journeys
from ctxledger_cli.demo.dropped_result import DROP_CALL_IDS
from ctxledger_cli.demo.real_agents import (
    dropped_result,
    load_agents,
    orphaned_call,
    run_seed_004,
    seed_000_first_rows,
    seed_001_emergency_trim,
)
from ctxledger_cli.demo.seed_000_first_rows import ORDERS_CALL_ID
from ctxledger_cli.demo.seed_001_context_overflow import ORPHAN_CALL_IDS, TRIM_CALL_IDS
from ctxledger_cli.demo.seed_002_log_clip import LOG_CALL_ID, seed_002_log_clip
from ctxledger_cli.demo.seed_004_silent_loss import LOOKUP_CALL_ID, SEARCH_CALL_ID

#: Incident name -> (the tool call id that carries the incident, the verdict the rules
#: must give it). A call travels in several requests, one journey each; the verdict is
#: the worst of its journeys. Every other journey of an incident is ``intact``. Call ids
#: are unique across incidents: look each one up in ``/api/v1/reports`` by its id.
EXPECTED_VERDICTS: dict[str, tuple[str, str]] = {
    "seed_004_silent_loss": (SEARCH_CALL_ID, "silent"),
    "seed_002_log_clip": (LOG_CALL_ID, "declared"),
    "seed_000_first_rows": (ORDERS_CALL_ID, "unmarked"),
    "seed_001_emergency_trim": (TRIM_CALL_IDS[0], "declared"),
    "orphaned_call": (ORPHAN_CALL_IDS[0], "orphaned"),
    "dropped_result": (DROP_CALL_IDS[0], "dropped"),
    "clean_journeys": (CLEAN_CALL_IDS[0], "intact"),
}

#: Incident name -> every tool call id the incident issues (its run's journeys).
INCIDENT_CALL_IDS: dict[str, tuple[str, ...]] = {
    "seed_004_silent_loss": (SEARCH_CALL_ID, LOOKUP_CALL_ID),
    "seed_002_log_clip": (LOG_CALL_ID,),
    "seed_000_first_rows": (ORDERS_CALL_ID,),
    "seed_001_emergency_trim": TRIM_CALL_IDS,
    "orphaned_call": ORPHAN_CALL_IDS,
    "dropped_result": DROP_CALL_IDS,
    "clean_journeys": CLEAN_CALL_IDS,
}

#: Incident name -> the function that runs it as one agent run (one trace); each takes an
#: optional model. Seeds 004, 000 and 001 (with its naive trim, ``orphaned_call``) and the
#: dropped result are real loops on the real clients against a provider stand-in
#: (:mod:`.real_agents`), the others scripted loops.
INCIDENTS: dict[str, Callable[..., None]] = {
    "seed_004_silent_loss": run_seed_004,
    "seed_002_log_clip": seed_002_log_clip,
    "seed_000_first_rows": seed_000_first_rows,
    "seed_001_emergency_trim": seed_001_emergency_trim,
    "orphaned_call": orphaned_call,
    "dropped_result": dropped_result,
    "clean_journeys": clean_journeys,
}


def run_all_incidents(model: str | None = None) -> dict[str, str]:
    """Run every incident, each in its own trace (``model`` for all of them, else each its
    own); return incident name -> the verdict the rules must give its tool call (see
    :data:`EXPECTED_VERDICTS`)."""
    load_agents()
    for incident in INCIDENTS.values():
        if model is None:
            incident()
        else:
            incident(model)
    return {name: verdict for name, (_, verdict) in EXPECTED_VERDICTS.items()}
