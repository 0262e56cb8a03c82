"""How the Alerts page words and colours what it shows: rules in words, sinks, times,
and one colour per state, delivery and severity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from ctxledger.verdicts import ALERT_SEVERITIES

DELIVERY_HELP = {
    "pending": "not delivered yet: first attempt due, or retrying with backoff",
    "delivered": "the sink accepted it",
    "dead": "given up after max_attempts (or its sink is no longer configured)",
}
#: Most severe first: critical 0, warning 1, info 2.
SEVERITY_ORDER = {severity: rank for rank, severity in enumerate(reversed(ALERT_SEVERITIES))}
STATE_COLORS = {"firing": "#c62828", "resolved": "#2e7d32", "pending": "#9e9e9e"}
DELIVERY_COLORS = {"dead": "#c62828", "pending": "#f9a825", "delivered": "#2e7d32"}
SEVERITY_COLORS = {"critical": "#c62828", "warning": "#f9a825", "info": "#1565c0"}


def rule_in_words(rule: dict[str, Any]) -> str:
    """A rule in words: 'silent, dropped or orphaned journeys (agent x)'."""
    what = []
    if rule["verdicts"]:
        verdicts = list(rule["verdicts"])
        listed = (
            verdicts[0] if len(verdicts) == 1 else f"{', '.join(verdicts[:-1])} or {verdicts[-1]}"
        )
        what.append(f"{listed} journeys")
    if rule.get("min_lost_token_share") is not None:
        what.append(f"more than {rule['min_lost_token_share'] * 100:g}% of a result's tokens lost")
    if rule.get("must_keep_lost"):
        what.append("must-keep items lost")
    scope = []
    if rule["agents"]:
        scope.append(f"agent {' or '.join(rule['agents'])}")
    if rule["tools"]:
        scope.append(f"tool {' or '.join(rule['tools'])}")
    if rule.get("layers"):
        scope.append(f"lost at {' or '.join(name.replace('_', ' ') for name in rule['layers'])}")
    text = " with ".join(what)
    return f"{text} ({', '.join(scope)})" if scope else text


def sink_label(name: str, sink_type: str, shown: Callable[[str], str] = str) -> str:
    """A sink by name (``shown`` as, e.g. a code span), with its type when the name does
    not already say it: "ops (webhook)", but "log" rather than "log (log)"."""
    return shown(name) if name == sink_type else f"{shown(name)} ({sink_type})"


def color_by_value(colors: dict[str, str]) -> Any:
    def style(value: Any) -> str:
        color = colors.get(str(value))
        return f"color: {color}; font-weight: 600" if color else ""

    return style


def timestamp(seconds: float | None) -> Any:
    return pd.Timestamp(seconds, unit="s", tz="UTC") if seconds is not None else pd.NaT
