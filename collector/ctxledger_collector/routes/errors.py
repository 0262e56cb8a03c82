"""Database errors met by the query API: an outage is answered 503 + Retry-After with a
JSON error (the client retries), never a 500 with a traceback."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from sqlalchemy.exc import SQLAlchemyError

from ctxledger_collector.routes.readable_json import ReadableJSONResponse as JSONResponse
from ctxledger_collector.routes.state import AppState
from ctxledger_collector.storage.database import is_storage_outage

logger = logging.getLogger("ctxledger.collector")


def database_message(error: Exception) -> str:
    """The error's class and the database's own first line (``too many clients``,
    ``deadlock detected``, ``connection refused``): what tells one outage from another,
    without the statement or its parameters."""
    original = getattr(error, "orig", None) or error
    lines = str(original).strip().splitlines()
    first = lines[0] if lines else ""
    return f"{original.__class__.__name__}: {first}" if first else original.__class__.__name__


async def _database_error(request: Request, error: Exception) -> JSONResponse:
    state: AppState = request.app.state.ctxledger
    if is_storage_outage(error):
        logger.warning(
            "ctxledger collector: %s %s: storage unavailable: %s",
            request.method,
            request.url.path,
            database_message(error),
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
