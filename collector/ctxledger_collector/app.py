"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool

from ctxledger.__about__ import __version__
from ctxledger.text import count_with_the_fastest_counter
from ctxledger_collector.alerts.config import default_config, load_alerts_config
from ctxledger_collector.alerts.delivery import DeliveryWorker
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.forwarding.forwarder import Forwarder
from ctxledger_collector.ingest.admission import IngestAdmission
from ctxledger_collector.ingest.shutdown_drain import ShutdownDrain
from ctxledger_collector.ingest.spool import IngestSpool
from ctxledger_collector.ingest.spool_replay import SpoolReplayer
from ctxledger_collector.judge.store import Store
from ctxledger_collector.ops.database_start import prepare_database
from ctxledger_collector.ops.exit_deadline import arm_exit_deadline
from ctxledger_collector.ops.metrics import CollectorMetrics
from ctxledger_collector.ops.readiness import ReadinessProbe
from ctxledger_collector.ops.scrape_collectors import SpoolSize
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.routes import alerts as alert_routes
from ctxledger_collector.routes import errors, health, ingest, queries, rejections, stats
from ctxledger_collector.routes.access import READ_KEY_NEEDED
from ctxledger_collector.routes.ingest_storage import replay_spooled
from ctxledger_collector.routes.readable_json import NoSniff, ReadableJSONResponse
from ctxledger_collector.routes.state import AppState
from ctxledger_collector.storage.database import is_storage_outage, make_engine
from ctxledger_collector.storage.partitions import ensure_ahead
from ctxledger_collector.storage.retention import prune, retention_cutoff
from ctxledger_collector.storage.table_statistics import analyse_new_tables

logger = logging.getLogger("ctxledger.collector")

#: At shutdown, how long the spool replayer may take to finish the export it is storing.
_REPLAY_STOP_S = 5.0
#: At shutdown, how long exports still being stored may take to end their chunk.
_STORAGE_STOP_S = 5.0
#: How often PostgreSQL tables without statistics are looked for (one catalog read).
_STATISTICS_CHECK_S = 2.0


async def _sweep_forever(state: AppState) -> None:
    """Turn journeys whose later stages never came into ``incomplete``, and keep
    PostgreSQL's partitions ahead of the runs."""
    while True:
        await asyncio.sleep(state.settings.sweep_interval_s)
        try:
            outcome = await run_in_threadpool(state.store.sweep_unsettled)
            state.metrics.count_changes(outcome.changes)
            await run_in_threadpool(ensure_ahead, state.engine, state.settings.partition_runs)
        except Exception as error:  # a failed sweep is retried at the next tick
            logger.warning("ctxledger collector: sweep failed: %s", error)


async def _analyse_new_tables_forever(state: AppState) -> None:
    """Give new PostgreSQL tables and partitions their first statistics within seconds
    (autovacuum may take a minute, while the ingest's lookups are planned from guesses)."""
    while True:
        await asyncio.sleep(_STATISTICS_CHECK_S)
        try:
            analysed = await run_in_threadpool(analyse_new_tables, state.engine)
        except Exception as error:
            if is_storage_outage(error):
                continue  # tried again once the database is back
            # e.g. not the tables' owner: autovacuum still gives them statistics
            logger.warning("ctxledger collector: could not analyse new tables: %s", error)
            return
        if analysed:
            logger.info("ctxledger collector: first statistics of %s", ", ".join(analysed))


async def _retain_forever(state: AppState) -> None:
    """Apply ``CTXLEDGER_RETENTION_DAYS``: remove the runs older than it, batch by batch."""
    while True:
        cutoff = retention_cutoff(state.settings.retention_days)
        if cutoff is not None:
            try:
                await run_in_threadpool(prune, state.engine, cutoff, writer=state.store.writer)
            except Exception as error:  # retried at the next interval
                logger.warning("ctxledger collector: retention sweep failed: %s", error)
        await asyncio.sleep(state.settings.retention_interval_s)


def load_alerts(settings: Settings) -> AlertContext:
    """The alert rules of ``CTXLEDGER_ALERTS_FILE``, or the built-in default. An invalid
    file raises :class:`AlertsConfigError`: the collector does not start on it."""
    config = (
        load_alerts_config(settings.alerts_file)
        if settings.alerts_file
        else default_config(settings.alert_log_file)
    )
    return AlertContext(
        config=config, dashboard_url=settings.dashboard_url, settle_s=settings.alert_settle_s
    )


def _spool_size(spool: IngestSpool) -> SpoolSize:
    usage = spool.usage()
    return SpoolSize(
        usage.requests, usage.spans, usage.bytes, spool.max_bytes if spool.enabled else 0
    )


#: The cyclic collector's generation thresholds while the app serves (defaults: 700, 10, 10).
SERVING_GC_THRESHOLDS = (10_000, 10, 10)


def create_app(settings: Settings | None = None, exit_deadline_s: float | None = None) -> FastAPI:
    """Build the collector app. The database is prepared when the app starts.

    ``exit_deadline_s`` (set by ``ctxledger serve``, never in a process that hosts the
    app among other work) bounds how long the process may linger after the app stopped:
    a worker thread stuck in a hung database call cannot hold the exit. Such an app also
    hears SIGTERM and SIGINT, so that an export it cannot finish before the shutdown
    timeout is answered 503 (:mod:`.shutdown_drain`)."""
    settings = settings or Settings()
    count_with_the_fastest_counter()  # a collector counts far past an agent's needs
    alerts = load_alerts(settings)
    engine = make_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    metrics = CollectorMetrics(engine, label_cap=alerts.config.label_cap)
    forwarder = Forwarder(settings.forward_destinations(), settings.forward_limits(), metrics)
    spool = IngestSpool.from_settings(settings)
    state = AppState(
        settings=settings,
        engine=engine,
        store=Store(engine, settings.tolerances(), alerts),
        metrics=metrics,
        alerts=alerts,
        admission=IngestAdmission(settings.admission_limits()),
        forwarder=forwarder,
        spool=spool,
        readiness=ReadinessProbe(engine, settings, spool),
        ingest_keys=settings.api_key_set(),
        read_keys=settings.read_key_set(),
        drain=ShutdownDrain(settings.shutdown_timeout_s),
    )
    replayer = SpoolReplayer(spool, lambda export: replay_spooled(state, export), metrics)
    state.replayer = replayer
    metrics.watch_spool(lambda: _spool_size(spool))
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
        await run_in_threadpool(ensure_ahead, engine, settings.partition_runs)
        sweeper = asyncio.create_task(_sweep_forever(state))
        retainer = asyncio.create_task(_retain_forever(state))
        background = [sweeper, retainer]
        if engine.dialect.name == "postgresql":
            background.append(asyncio.create_task(_analyse_new_tables_forever(state)))
        if exit_deadline_s is not None:  # `serve`: the server's signal handlers are ours
            state.drain.hook_signals(asyncio.get_running_loop())
        worker.start()
        forwarder.start()
        replayer.start()  # a spool left by an earlier process is replayed now
        # What start-up made lives as long as the process: out of the cyclic collector's
        # sight, a full collection during a large answer walks only that answer's
        # objects (a run of 1,000 journeys: ~270 -> ~95 ms, most of it was collections).
        gc.collect()
        gc.freeze()
        # A decoded batch allocates hundreds of thousands of containers, nearly all freed
        # by reference counting: at the default 700 the young collection ran every few
        # hundred spans and cost ~4 % of ingest; cycles are still collected, less often.
        thresholds = gc.get_threshold()
        gc.set_threshold(*SERVING_GC_THRESHOLDS)
        try:
            yield
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
            for task in background:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            # The server has stopped taking requests: stop replaying (what is left stays
            # on disk for the next start), flush the forwarding queues (bounded), hand
            # back the alert leases this process holds.
            await run_in_threadpool(replayer.stop, _REPLAY_STOP_S)
            await run_in_threadpool(forwarder.stop)
            await run_in_threadpool(worker.stop)
            # An export answered 503 at shutdown ends with the chunk it is committing.
            await run_in_threadpool(state.drain.wait_for_storage, _STORAGE_STOP_S)
            engine.dispose()
            if exit_deadline_s is not None:
                arm_exit_deadline(exit_deadline_s)

    # /docs loads Swagger UI from the files fastapi-offline ships, not from a CDN: the API
    # docs render on a machine without internet access. No /redoc: ReDoc's bundle always
    # fetches its vendor's logo from a CDN.
    app = FastAPIOffline(
        redoc_url=None,
        default_response_class=ReadableJSONResponse,
        title="ctxledger collector",
        version=__version__,
        summary="Receives OTLP measurements of tool results and judges every journey.",
        lifespan=lifespan,
    )
    app.state.ctxledger = state
    app.add_middleware(NoSniff)
    app.include_router(ingest.router)
    app.include_router(queries.router, dependencies=READ_KEY_NEEDED)
    app.include_router(stats.router, dependencies=READ_KEY_NEEDED)
    app.include_router(alert_routes.router, dependencies=READ_KEY_NEEDED)
    app.include_router(rejections.router, dependencies=READ_KEY_NEEDED)
    app.include_router(health.router)
    errors.install(app)
    return app
