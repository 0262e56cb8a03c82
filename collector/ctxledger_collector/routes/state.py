"""What the routes share: settings, engine, store, metrics, ingest admission, the
forwarder, the ingest spool and its replayer, the readiness probe and the shutdown drain of one
app."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.forwarding.forwarder import Forwarder
from ctxledger_collector.ingest.admission import IngestAdmission
from ctxledger_collector.ingest.shutdown_drain import ShutdownDrain
from ctxledger_collector.ingest.spool import IngestSpool
from ctxledger_collector.ingest.spool_replay import SpoolReplayer
from ctxledger_collector.judge.store import Store
from ctxledger_collector.ops.keys import KeySet
from ctxledger_collector.ops.metrics import CollectorMetrics
from ctxledger_collector.ops.readiness import ReadinessProbe
from ctxledger_collector.ops.settings import Settings


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    store: Store
    metrics: CollectorMetrics
    alerts: AlertContext
    admission: IngestAdmission
    forwarder: Forwarder
    spool: IngestSpool
    readiness: ReadinessProbe
    replayer: SpoolReplayer | None = None
    ingest_keys: KeySet = field(default_factory=KeySet)
    read_keys: KeySet = field(default_factory=KeySet)
    drain: ShutdownDrain = field(default_factory=lambda: ShutdownDrain(0.0))
