"""The rules: what is a loss and which verdict a journey gets.

Pure and standard-library only. The SDK's local ledger, the collector and the tests
all call :func:`judge_trace`; nothing else decides a verdict. The words around the
verdicts (severities, the losing set, meanings, stage orders) are in
:mod:`ctxledger.verdicts.vocabulary` and exported here.
"""

from ctxledger.verdicts.duplicates import preferred_copy, preferred_copy_key
from ctxledger.verdicts.journeys import worst
from ctxledger.verdicts.judge import judge_trace
from ctxledger.verdicts.model import (
    Manifest,
    Measurement,
    Report,
    Tolerances,
    Transition,
)
from ctxledger.verdicts.results import first_losses, sent_order
from ctxledger.verdicts.transitions import compare
from ctxledger.verdicts.vocabulary import (
    ALERT_SEVERITIES,
    LAYERS,
    LOSING_VERDICTS,
    OTHER_LAYER,
    STAGE_EMERGENCY_TRIM_ORDER,
    VERDICT_MEANINGS,
    VERDICT_SEVERITY,
    VERDICTS,
    AlertSeverity,
    layer_name,
)

__all__ = [
    "ALERT_SEVERITIES",
    "LAYERS",
    "LOSING_VERDICTS",
    "OTHER_LAYER",
    "STAGE_EMERGENCY_TRIM_ORDER",
    "VERDICTS",
    "VERDICT_MEANINGS",
    "VERDICT_SEVERITY",
    "AlertSeverity",
    "Manifest",
    "Measurement",
    "Report",
    "Tolerances",
    "Transition",
    "compare",
    "first_losses",
    "judge_trace",
    "layer_name",
    "preferred_copy",
    "preferred_copy_key",
    "sent_order",
    "worst",
]
