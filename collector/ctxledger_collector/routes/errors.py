"""Database errors met by the query API: an outage is answered 503 + Retry-After with a
JSON error (the client retries), never a 500 with a traceback."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from ctxledger_collector.database import is_storage_outage
from ctxledger_collector.state import AppState

logger = logging.getLogger("ctxledger.collector")


async def _database_error(request: Request, error: Exception) -> JSONResponse:
    state: AppState = request.app.state.ctxledger
    if is_storage_outage(error):
        logger.warning(
            "ctxledger collector: %s %s: storage unavailable: %s",
            request.method,
            request.url.path,
            error.__class__.__name__,
        )
        return JSONResponse(
            {"detail": "storage unavailable; retry later"},
            status_code=503,
            headers={"Retry-After": str(state.settings.retry_after_s)},
        )
    logger.error(
        "ctxledger collector: %s %s failed", request.method, request.url.path, exc_info=error
    )
    return JSONResponse({"detail": "internal error (logged by the collector)"}, status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(SQLAlchemyError, _database_error)
