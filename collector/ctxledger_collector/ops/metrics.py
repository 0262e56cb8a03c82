"""Prometheus metrics: ingest counters and latency, rejected spans, journeys by verdict,
forwarding to other OTLP backends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ctxledger.verdicts import layer_name
from ctxledger_collector.decoded.rejection_codes import REASONS
from ctxledger_collector.forwarding.queue import QueueSize
from ctxledger_collector.judge.judgments import VerdictChange
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


class CollectorMetrics:
    """The metrics of one collector app, in a registry of its own."""

    def __init__(self, engine: Engine, label_cap: int = 100) -> None:
        self.registry = CollectorRegistry()
        self.agent_label = LabelLimiter(label_cap)
        self.tool_label = LabelLimiter(label_cap)
        self.journeys_total = Counter(
            "ctxledger_journeys",
            "Journeys entering each verdict (a journey counts once per verdict it reaches)",
            ["verdict", "agent", "tool"],
            registry=self.registry,
        )
        self.lost_tokens_total = Counter(
            "ctxledger_lost_tokens",
            "Tokens of tool results lost on their way to the model",
            ["verdict", "agent", "tool"],
            registry=self.registry,
        )
        self.tokens_unknown_total = Counter(
            "ctxledger_journeys_tokens_unknown",
            "Journeys entering a verdict whose lost tokens are unknown (their stages counted "
            "tokens with different encodings): ctxledger_lost_tokens leaves them out",
            ["verdict", "agent", "tool"],
            registry=self.registry,
        )
        self.layer_journeys_total = Counter(
            "ctxledger_layer_journeys",
            "Journeys entering a verdict whose worst finding sits in a layer (model_server: "
            "the model server read fewer tokens than were sent)",
            ["layer", "verdict"],
            registry=self.registry,
        )
        self.notifications = Counter(
            "ctxledger_alert_deliveries",
            "Alert delivery attempts by sink and outcome (delivered, failed, dead)",
            ["sink", "outcome"],
            registry=self.registry,
        )
        self.delivery_duration = Histogram(
            "ctxledger_alert_delivery_duration_seconds",
            "Time one delivery attempt took",
            ["sink"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
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
        self.log_records = Counter(
            "ctxledger_ingest_log_records",
            "OTLP log records received by kind: stored (read by the audit), ignored (not "
            "an event the audit reads), rejected",
            ["kind"],
            registry=self.registry,
        )
        self.rejected_spans = Counter(
            "ctxledger_ingest_rejected_spans",
            "Spans rejected alone (the rest of their batch kept), by reason: "
            + ", ".join(REASONS)
            + " (GET /api/v1/rejections lists the recent ones)",
            ["reason"],
            registry=self.registry,
        )
        for reason in REASONS:  # every reason is exported from the start, at 0
            self.rejected_spans.labels(reason)
        self.refused = Counter(
            "ctxledger_ingest_refused",
            "Export requests refused with 503 + Retry-After before their body was read, "
            "because ingest was busy: reason requests (every slot taken) or bytes (the "
            "in-flight byte budget spent)",
            ["reason"],
            registry=self.registry,
        )
        self.in_flight_requests = Gauge(
            "ctxledger_ingest_in_flight_requests",
            "Export requests being read, decoded or stored now",
            registry=self.registry,
        )
        self.in_flight_bytes = Gauge(
            "ctxledger_ingest_in_flight_bytes",
            "Body bytes reserved by the export requests in flight",
            registry=self.registry,
        )
        self.duration = Histogram(
            "ctxledger_ingest_duration_seconds",
            "Time from receiving an export request to its committed answer",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.forward_requests = Counter(
            "ctxledger_forward_requests",
            "Accepted export requests forwarded to another OTLP endpoint, by destination "
            "and outcome: delivered, retried (one per retry), dropped_full (the oldest, "
            "dropped from a full queue), given_up (refused for good, or retried too long), "
            "dropped_shutdown (left unsent when the collector stopped)",
            ["destination", "outcome"],
            registry=self.registry,
        )
        self.forward_bytes = Counter(
            "ctxledger_forward_bytes",
            "Body bytes of the forwarded requests, by destination and outcome",
            ["destination", "outcome"],
            registry=self.registry,
        )
        self.spooled = Counter(
            "ctxledger_ingest_spooled",
            "Exports the database could not take, by what became of them: kept (on disk, "
            "answered 200), full (the spool had no room: 503), failed (the spool could not "
            "be written: 503), off (no spool: 503)",
            ["outcome"],
            registry=self.registry,
        )
        self.spool_replays = Counter(
            "ctxledger_ingest_spool_replays",
            "Spooled exports replayed into the database: stored, retried (the database "
            "was still out), discarded (a damaged file)",
            ["outcome"],
            registry=self.registry,
        )
        self.registry.register(JourneyCollector(engine, self.agent_label, self.tool_label))

    def count_changes(self, changes: Iterable[VerdictChange]) -> None:
        for change in changes:
            report = change.report
            labels = (
                report.verdict,
                self.agent_label(report.agent_name),
                self.tool_label(report.tool_name),
            )
            self.journeys_total.labels(*labels).inc()
            layer = layer_name(report.layer)
            if layer is not None:
                self.layer_journeys_total.labels(layer, report.verdict).inc()
            if report.lost_tokens_unknown is not None:
                self.tokens_unknown_total.labels(*labels).inc()
            grown = report.lost_tokens - change.previous_lost_tokens
            if grown > 0:
                self.lost_tokens_total.labels(*labels).inc(grown)

    def watch_forward_queues(self, sizes: Callable[[], Iterable[QueueSize]]) -> None:
        self.registry.register(ForwardQueueCollector(sizes))

    def watch_spool(self, size: Callable[[], SpoolSize]) -> None:
        self.registry.register(SpoolCollector(size))

    def observe_delivery(self, sink: str, outcome: str, seconds: float) -> None:
        self.notifications.labels(sink, outcome).inc()
        self.delivery_duration.labels(sink).observe(seconds)
