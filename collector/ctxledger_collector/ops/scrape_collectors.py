"""The metrics read when Prometheus scrapes: journeys by verdict (from the database),
the forwarding queues and the spool; and the cap on distinct label values."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ctxledger_collector.forwarding.queue import QueueSize
from ctxledger_collector.query.journey_aggregates import tally
from ctxledger_collector.query.report_filters import ReportFilter
from ctxledger_collector.query.time_slices import Slice

ALL_TIME = [Slice(0.0, None, None)]


class JourneyCollector(Collector):
    """Current journeys by verdict, agent and tool, read from the journey counters at scrape."""

    def __init__(self, engine: Engine, agent_label: LabelLimiter, tool_label: LabelLimiter) -> None:
        self.engine = engine
        self.agent_label = agent_label
        self.tool_label = tool_label

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "ctxledger_database_up", "1 when the database answered the last scrape, else 0"
        )
        try:
            families = self._journeys()
        except SQLAlchemyError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _journeys(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        labels = ["verdict", "agent", "tool"]
        journeys = GaugeMetricFamily(
            "ctxledger_journeys",
            "Journeys (tool result x request) by their current verdict",
            labels=labels,
        )
        results = GaugeMetricFamily(
            "ctxledger_lost_results",
            "Lost tool results (silent, dropped, orphaned), each counted once, by the verdict "
            "of the journey where it was first lost",
            labels=labels,
        )
        with Session(self.engine) as session:
            # All time, from the counters: a scrape reads buckets, never the reports.
            counted = tally(
                session, ReportFilter(), ALL_TIME, ("verdict", "agent_name", "tool_name")
            )
        totals: dict[tuple[str, str, str], list[int]] = {}
        for (_, verdict, agent, tool), sums in counted.items():
            key = (verdict, self.agent_label(agent), self.tool_label(tool))
            total = totals.setdefault(key, [0, 0])
            total[0] += sums[0]
            total[1] += sums[3]
        for key, (count, lost) in totals.items():
            journeys.add_metric(list(key), count)
            if lost:
                results.add_metric(list(key), lost)
        return journeys, results


class ForwardQueueCollector(Collector):
    """Each forwarding destination's queue, read at scrape time (always current)."""

    def __init__(self, sizes: Callable[[], Iterable[QueueSize]]) -> None:
        self.sizes = sizes

    def collect(self) -> Iterator[Metric]:
        requests = GaugeMetricFamily(
            "ctxledger_forward_queue_requests",
            "Accepted export requests waiting to be forwarded, by destination",
            labels=["destination"],
        )
        size = GaugeMetricFamily(
            "ctxledger_forward_queue_bytes",
            "Body bytes of the requests waiting to be forwarded, by destination",
            labels=["destination"],
        )
        for queue in self.sizes():
            requests.add_metric([queue.destination], queue.requests)
            size.add_metric([queue.destination], queue.bytes)
        yield requests
        yield size


class SpoolSize(NamedTuple):
    requests: int
    spans: int
    bytes: int
    max_bytes: int


class SpoolCollector(Collector):
    """What the ingest spool holds, read from its folder at scrape time (every worker
    process sharing the folder reports the same numbers)."""

    def __init__(self, size: Callable[[], SpoolSize]) -> None:
        self.size = size

    def collect(self) -> Iterator[Metric]:
        size = self.size()
        for name, value, meaning in (
            ("requests", size.requests, "Accepted exports waiting in the ingest spool"),
            ("spans", size.spans, "Measurement and manifest spans of those exports"),
            ("bytes", size.bytes, "Bytes of the ingest spool's files"),
            ("max_bytes", size.max_bytes, "Bytes the ingest spool may hold (0: no spool)"),
        ):
            family = GaugeMetricFamily(f"ctxledger_ingest_spool_{name}", meaning)
            family.add_metric([], value)
            yield family


class LabelLimiter:
    """Bounds label cardinality: the first ``cap`` distinct values pass, the rest become
    ``other`` (an agent or tool name is user data; a runaway one must not break Prometheus)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        name = value or ""
        with self._lock:
            if name in self._seen:
                return name
            if len(self._seen) < self.cap:
                self._seen.add(name)
                return name
        return "other"
