"""Which exact token counter a benchmark process counts with, and the steady state of a
process that has counted enough for the fastest one to take over."""

from __future__ import annotations

from ctxledger._fast_counter import fast_counter
from ctxledger._upgrading_counter import UpgradingCounter


def counter_name(encoding: str) -> str:
    fast = fast_counter(encoding)
    if fast is None:
        return "tiktoken"
    if isinstance(fast, UpgradingCounter):
        return f"{fast.describe()} ({'after' if fast.upgraded.is_set() else 'before'} the upgrade)"
    return fast.describe()


def steady_counter(encoding: str) -> None:
    """The counter of a process that has counted enough for the faster one to take over
    (``ctxledger._upgrading_counter``), as in a long-lived agent or collector."""
    fast = fast_counter(encoding)
    if isinstance(fast, UpgradingCounter):
        fast.upgrade_now()
        fast.upgraded.wait(120)
