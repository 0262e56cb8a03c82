"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from ctxledger.__about__ import __version__
from ctxledger_collector.admission import IngestAdmission
from ctxledger_collector.alerts.config import default_config, load_alerts_config
from ctxledger_collector.alerts.delivery import DeliveryWorker
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.database import make_engine
from ctxledger_collector.forwarding.forwarder import Forwarder
from ctxledger_collector.metrics import CollectorMetrics
from ctxledger_collector.migrate import is_up_to_date, upgrade
from ctxledger_collector.routes import alerts as alert_routes
from ctxledger_collector.routes import health, ingest, queries, stats
from ctxledger_collector.routes.access import READ_KEY_NEEDED
from ctxledger_collector.settings import Settings
from ctxledger_collector.state import AppState
from ctxledger_collector.store import Store

logger = logging.getLogger("ctxledger.collector")


class SchemaNotMigrated(RuntimeError):
    """The database is behind the latest migration and auto-migration is off."""


def prepare_database(settings: Settings) -> None:
    """Migrate (SQLite by default) or refuse to run on an un-migrated database."""
    if settings.should_auto_migrate:
        upgrade(settings.database_url)
    elif not is_up_to_date(settings.database_url):
        raise SchemaNotMigrated(
            "the database is not at the latest migration. Run `ctxledger db upgrade` "
            "(with CTXLEDGER_DATABASE_URL set), or start with CTXLEDGER_AUTO_MIGRATE=true"
        )


async def _sweep_forever(state: AppState) -> None:
    """Turn journeys whose later stages never came into ``incomplete``."""
    while True:
        await asyncio.sleep(state.settings.sweep_interval_s)
        try:
            outcome = await run_in_threadpool(state.store.sweep_unsettled)
            state.metrics.count_changes(outcome.changes)
        except Exception as error:  # a failed sweep is retried at the next tick
            logger.warning("ctxledger collector: sweep failed: %s", error)


def load_alerts(settings: Settings) -> AlertContext:
    """The alert rules of ``CTXLEDGER_ALERTS_FILE``, or the built-in default. An invalid
    file raises :class:`AlertsConfigError`: the collector does not start on it."""
    config = (
        load_alerts_config(settings.alerts_file) if settings.alerts_file else (default_config())
    )
    return AlertContext(
        config=config, dashboard_url=settings.dashboard_url, settle_s=settings.alert_settle_s
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the collector app. The database is prepared when the app starts."""
    settings = settings or Settings()
    alerts = load_alerts(settings)
    engine = make_engine(settings.database_url)
    metrics = CollectorMetrics(engine, label_cap=alerts.config.label_cap)
    forwarder = Forwarder(settings.forward_destinations(), settings.forward_limits(), metrics)
    state = AppState(
        settings=settings,
        engine=engine,
        store=Store(engine, settings.tolerances(), alerts),
        metrics=metrics,
        alerts=alerts,
        admission=IngestAdmission(settings.admission_limits()),
        forwarder=forwarder,
        ingest_keys=settings.api_key_set(),
        read_keys=settings.read_key_set(),
    )
    worker = DeliveryWorker(
        engine,
        alerts,
        lease_s=settings.alert_lease_s,
        tick_s=settings.alert_tick_s,
        retry_base_s=settings.alert_retry_base_s,
        observer=metrics.observe_delivery,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(prepare_database, settings)
        sweeper = asyncio.create_task(_sweep_forever(state))
        worker.start()
        forwarder.start()
        # What start-up made lives as long as the process: out of the cyclic collector's
        # sight, a full collection during a large answer walks only that answer's
        # objects (a run of 1,000 journeys: ~270 -> ~95 ms, most of it was collections).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            # The server has stopped taking requests: flush the forwarding queues (bounded).
            await run_in_threadpool(forwarder.stop)
            await run_in_threadpool(worker.stop)
            engine.dispose()

    app = FastAPI(
        title="ctxledger collector",
        version=__version__,
        summary="Receives OTLP measurements of tool results and judges every journey.",
        lifespan=lifespan,
    )
    app.state.ctxledger = state
    app.include_router(ingest.router)
    app.include_router(queries.router, dependencies=READ_KEY_NEEDED)
    app.include_router(stats.router, dependencies=READ_KEY_NEEDED)
    app.include_router(alert_routes.router, dependencies=READ_KEY_NEEDED)
    app.include_router(health.router)
    return app
