"""The rules: what is a loss and which verdict a journey gets.

Pure and standard-library only. The SDK's local ledger, the collector and the tests
all call :func:`judge_trace`; nothing else decides a verdict.
"""

from ctxledger.verdicts.duplicates import preferred_copy, preferred_copy_key
from ctxledger.verdicts.judge import compare, judge_trace, worst
from ctxledger.verdicts.model import (
    VERDICT_SEVERITY,
    VERDICTS,
    Manifest,
    Measurement,
    Report,
    Tolerances,
    Transition,
)

__all__ = [
    "VERDICTS",
    "VERDICT_SEVERITY",
    "Manifest",
    "Measurement",
    "Report",
    "Tolerances",
    "Transition",
    "compare",
    "judge_trace",
    "preferred_copy",
    "preferred_copy_key",
    "worst",
]
