"""What the routes share: settings, engine, store, metrics, ingest admission and the
forwarder of one app."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from ctxledger_collector.admission import IngestAdmission
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.forwarding.forwarder import Forwarder
from ctxledger_collector.keys import KeySet
from ctxledger_collector.metrics import CollectorMetrics
from ctxledger_collector.settings import Settings
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
    ingest_keys: KeySet = field(default_factory=KeySet)
    read_keys: KeySet = field(default_factory=KeySet)
