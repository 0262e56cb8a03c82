"""Read access: the query API and ``/metrics`` need a read key once read keys are set.

Read keys are separate from ingest keys, so an agent that may send measurements cannot
read anyone's journeys, and a dashboard that reads cannot write. Health endpoints and the
OpenAPI document stay open: they hold no data.
"""

from __future__ import annotations

from fastapi import Depends, HTTPException, Request

from ctxledger_collector.ops.keys import BEARER_CHALLENGE, bearer_token
from ctxledger_collector.routes.state import AppState


def check_read_key(request: Request) -> None:
    """401 unless the request carries a read key (when read keys are configured)."""
    state: AppState = request.app.state.ctxledger
    keys = state.read_keys
    if keys and not keys.accepts(bearer_token(request.headers.get("authorization"))):
        raise HTTPException(
            401, "missing or wrong read key (Authorization: Bearer <read key>)", BEARER_CHALLENGE
        )


def check_metrics_key(request: Request) -> None:
    state: AppState = request.app.state.ctxledger
    if state.settings.metrics_need_read_key:
        check_read_key(request)


READ_KEY_NEEDED = [Depends(check_read_key)]
