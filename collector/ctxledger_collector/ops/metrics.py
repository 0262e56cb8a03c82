"""Prometheus metrics: ingest counters and latency, rejected spans, journeys by verdict,
forwarding to other OTLP backends."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from sqlalchemy import Engine

from ctxledger.verdicts import layer_name
from ctxledger_collector.decoded.rejection_codes import REASONS
from ctxledger_collector.forwarding.queue import QueueSize
from ctxledger_collector.judge.judgments import VerdictChange
from ctxledger_collector.ops.scrape_collectors import (
    ForwardQueueCollector,
    JourneyCollector,
    LabelLimiter,
    SpoolCollector,
    SpoolSize,
)


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
