"""What alerting needs to know wherever it runs: the rules and sinks, the dashboard's
address for links, and how long events settle before they are notified."""

from __future__ import annotations

from dataclasses import dataclass

from ctxledger_collector.alerts.config import AlertsConfig

GroupKey = tuple[str, str, str]  # rule, agent, tool


@dataclass(frozen=True)
class AlertContext:
    config: AlertsConfig
    dashboard_url: str | None = None
    #: Events wait this long before they are notified, so stages that arrive out of order
    #: (a declaration after the loss, a manifest before the stages) correct them first.
    settle_s: float = 0.0
