"""Prometheus metrics: ingest counters and latency, rejected spans, journeys by verdict."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ctxledger_collector.tables import REPORTS


class JourneyCollector(Collector):
    """Current journeys by verdict, agent and tool, read from the database at scrape."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "ctxledger_database_up", "1 when the database answered the last scrape, else 0"
        )
        try:
            family = self._journeys()
        except SQLAlchemyError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield family

    def _journeys(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "ctxledger_journeys",
            "Journeys (tool result x request) by their current verdict",
            labels=["verdict", "agent", "tool"],
        )
        with Session(self.engine) as session:
            rows = session.execute(
                select(
                    REPORTS.c.verdict, REPORTS.c.agent_name, REPORTS.c.tool_name, func.count()
                ).group_by(REPORTS.c.verdict, REPORTS.c.agent_name, REPORTS.c.tool_name)
            )
            for verdict, agent, tool, count in rows:
                family.add_metric([verdict, agent or "", tool or ""], count)
        return family


class CollectorMetrics:
    """The metrics of one collector app, in a registry of its own."""

    def __init__(self, engine: Engine) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ctxledger_ingest_requests",
            "OTLP export requests by encoding and HTTP status",
            ["encoding", "status"],
            registry=self.registry,
        )
        self.spans = Counter(
            "ctxledger_ingest_spans",
            "Spans received by kind: measurement, manifest, ignored (not ours), rejected",
            ["kind"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "ctxledger_ingest_duration_seconds",
            "Time from receiving an export request to its committed answer",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.registry.register(JourneyCollector(engine))
