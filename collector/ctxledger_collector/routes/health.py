"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from ctxledger_collector.migrate import is_up_to_date
from ctxledger_collector.routes.access import check_metrics_key
from ctxledger_collector.routes.deps import StateDep
from ctxledger_collector.state import AppState

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


def _database_problem(state: AppState) -> str | None:
    try:
        with state.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError as error:
        return f"database unreachable: {error.__class__.__name__}"
    if not is_up_to_date(state.settings.database_url):
        return "database schema is not at the latest migration: run `ctxledger db upgrade`"
    return None


@router.get("/readyz", summary="The database is reachable and migrated")
def readyz(state: StateDep) -> JSONResponse:
    problem = _database_problem(state)
    if problem:
        return JSONResponse({"status": "unavailable", "reason": problem}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    dependencies=[Depends(check_metrics_key)],
)
def metrics(state: StateDep) -> Response:
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
