"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from ctxledger.__about__ import __version__
from ctxledger_collector.database import make_engine
from ctxledger_collector.metrics import CollectorMetrics
from ctxledger_collector.migrate import is_up_to_date, upgrade
from ctxledger_collector.routes import health, ingest, queries, stats
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
            await run_in_threadpool(state.store.sweep_unsettled)
        except Exception as error:  # a failed sweep is retried at the next tick
            logger.warning("ctxledger collector: sweep failed: %s", error)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the collector app. The database is prepared when the app starts."""
    settings = settings or Settings()
    engine = make_engine(settings.database_url)
    state = AppState(
        settings=settings,
        engine=engine,
        store=Store(engine, settings.tolerances()),
        metrics=CollectorMetrics(engine),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(prepare_database, settings)
        sweeper = asyncio.create_task(_sweep_forever(state))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            engine.dispose()

    app = FastAPI(
        title="ctxledger collector",
        version=__version__,
        summary="Receives OTLP measurements of tool results and judges every journey.",
        lifespan=lifespan,
    )
    app.state.ctxledger = state
    app.include_router(ingest.router)
    app.include_router(queries.router)
    app.include_router(stats.router)
    app.include_router(health.router)
    return app
