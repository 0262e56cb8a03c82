"""Remedies the seeds describe, each of which declares what it removed (so the auditor
sees a ``declared`` loss, never a silent one): head+tail clipping, budget-fitted rows,
structured preservation, pagination, spill-and-fetch, emergency trim, pairing checks,
and the ``govern`` decorator that applies a budget policy per tool.

``spill`` and ``govern`` are functions of the submodules of the same name
(``ctxledger.remedies.spill.spill``, ``ctxledger.govern``); they are not re-exported here,
where they would hide those submodules."""

from ctxledger.remedies.budget import Budget
from ctxledger.remedies.clip import Clipped, clip_text
from ctxledger.remedies.emergency import (
    TrimResult,
    acall_with_emergency_trim,
    call_with_emergency_trim,
    emergency_trim,
    is_context_length_error,
)
from ctxledger.remedies.govern import Governed, Policy, apply_policy
from ctxledger.remedies.paging import Page, paginate
from ctxledger.remedies.pairing import PairingProblem, assert_paired, check_pairing
from ctxledger.remedies.rows import (
    DEFAULT_RULES,
    KeepRule,
    RowsClipped,
    StructuredKept,
    clip_rows,
    keep_structured,
)
from ctxledger.remedies.spill import (
    DirectorySpillStore,
    Spilled,
    SpillStore,
    fetch,
    fetch_tool_schema,
)

__all__ = [
    "DEFAULT_RULES",
    "Budget",
    "Clipped",
    "DirectorySpillStore",
    "Governed",
    "KeepRule",
    "Page",
    "PairingProblem",
    "Policy",
    "RowsClipped",
    "SpillStore",
    "Spilled",
    "StructuredKept",
    "TrimResult",
    "acall_with_emergency_trim",
    "apply_policy",
    "assert_paired",
    "call_with_emergency_trim",
    "check_pairing",
    "clip_rows",
    "clip_text",
    "emergency_trim",
    "fetch",
    "fetch_tool_schema",
    "is_context_length_error",
    "keep_structured",
    "paginate",
]
