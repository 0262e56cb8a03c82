"""What the routes share: settings, engine, store, metrics, ingest admission, the
forwarder, the ingest spool and its replayer, and the readiness probe of one app."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from ctxledger_collector.admission import IngestAdmission
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.forwarding.forwarder import Forwarder
from ctxledger_collector.ingest_spool import IngestSpool
from ctxledger_collector.keys import KeySet
from ctxledger_collector.metrics import CollectorMetrics
from ctxledger_collector.readiness import ReadinessProbe
from ctxledger_collector.settings import Settings
from ctxledger_collector.spool_replay import SpoolReplayer
from ctxledger_collector.store import Store


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
