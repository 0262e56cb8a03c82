"""Which rules a journey report matches. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from ctxledger import semconv as sc
from ctxledger.verdicts import Report, layer_name
from ctxledger_collector.alerts.config import Rule


def lost_token_share(report: Report) -> float | None:
    """Lost tokens over the tokens of the first stage that counted any."""
    first = next((m.tokens for m in report.stages if m.tokens), None)
    if not first:
        return None
    return report.lost_tokens / first


def rule_matches(rule: Rule, report: Report) -> bool:
    """Every condition the rule sets must hold; unset conditions do not filter."""
    if report.verdict == sc.VERDICT_INTACT and not rule.verdicts:
        return False
    if rule.verdicts and report.verdict not in rule.verdicts:
        return False
    if rule.agents and (report.agent_name or "") not in rule.agents:
        return False
    if rule.tools and (report.tool_name or "") not in rule.tools:
        return False
    if rule.layers and layer_name(report.layer) not in rule.layers:
        return False
    if rule.min_lost_token_share is not None:
        share = lost_token_share(report)
        if share is None or share <= rule.min_lost_token_share:
            return False
    return not (rule.must_keep_lost and report.lost_priority_items <= 0)


def matching_rules(rules: Sequence[Rule], report: Report) -> list[Rule]:
    return [rule for rule in rules if rule_matches(rule, report)]
