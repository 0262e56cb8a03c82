"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ctxledger_collector.routes.access import check_metrics_key
from ctxledger_collector.routes.deps import StateDep
from ctxledger_collector.routes.readable_json import ReadableJSONResponse as JSONResponse
from ctxledger_collector.routes.state import AppState

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


def _spool(state: AppState) -> dict[str, Any]:
    spool = state.spool
    usage = spool.usage()
    return {
        "enabled": spool.enabled,
        "directory": str(spool.directory) if spool.directory is not None else None,
        "requests": usage.requests,
        "spans": usage.spans,
        "bytes": usage.bytes,
        "max_bytes": spool.max_bytes if spool.enabled else 0,
    }


@router.get(
    "/readyz",
    summary="The database takes writes (probed, cached briefly) and is migrated; what "
    "waits in the ingest spool",
)
def readyz(state: StateDep) -> JSONResponse:
    readiness = state.readiness.check()
    body: dict[str, Any] = {"status": "ready" if readiness.problem is None else "unavailable"}
    if readiness.problem is not None:
        body["reason"] = readiness.problem
    body["spool"] = _spool(state)
    return JSONResponse(body, status_code=200 if readiness.problem is None else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    dependencies=[Depends(check_metrics_key)],
)
def metrics(state: StateDep) -> Response:
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
