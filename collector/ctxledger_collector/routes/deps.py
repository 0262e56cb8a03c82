"""What the route handlers share, as FastAPI dependencies: the app's state, a database
session per request, and the query parameters several routes take."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request
from sqlalchemy.orm import Session

from ctxledger.verdicts import LAYERS, OTHER_LAYER, VERDICTS
from ctxledger_collector.query.pagination import InvalidCursor, Page
from ctxledger_collector.query.report_filters import ReportFilter
from ctxledger_collector.routes.state import AppState


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.ctxledger
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_session(state: StateDep) -> Iterator[Session]:
    with Session(state.engine) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]

#: A trace id as OTLP JSON writes it (32 hex digits); upper case is accepted, and the
#: handlers look it up in lower case (``.lower()``), as the collector stores it.
TRACE_ID_PATTERN = "^[0-9a-fA-F]{32}$"
TraceId = Annotated[str, Path(pattern=TRACE_ID_PATTERN, description="32 hex digits (any case)")]
Limit = Annotated[int, Query(ge=1, le=1000, description="page size")]
#: Bounded so that no offset overflows a database integer (an offset past the rows is empty).
MAX_OFFSET = 2**31 - 1
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="rows to skip (use next_offset)")]
After = Annotated[
    str | None,
    Query(
        max_length=2048,
        description="the next_cursor of the previous page: the page after it, however many "
        "rows arrived meanwhile (instead of offset)",
    ),
]
#: Unix seconds from 1970 to the year 5138: every time the collector can store, and no
#: range whose buckets overflow a database integer.
MAX_TIME = 1e11
Since = Annotated[float | None, Query(ge=0, le=MAX_TIME, description="unix seconds, inclusive")]
Until = Annotated[float | None, Query(ge=0, le=MAX_TIME, description="unix seconds, exclusive")]
Verdicts = Annotated[list[str] | None, Query(description="repeat to allow several")]
FirstLost = Annotated[
    bool | None,
    Query(
        description="true: only the journeys where a tool result was first lost, so each "
        "lost result counts once (total: how many results were lost); false: every other "
        "journey (intact ones, and results still missing from an earlier loss)"
    ),
]


Layers = Annotated[
    list[str] | None,
    Query(
        description="where the worst finding sits, repeat to allow several: "
        + ", ".join([*LAYERS, OTHER_LAYER])
    ),
]


def layer_filter(values: list[str] | None) -> tuple[str, ...]:
    """The layers asked for; an unknown one is answered 422 with the known ones."""
    known = [*LAYERS, OTHER_LAYER]
    unknown = sorted(set(values or ()) - set(known))
    if unknown:
        raise HTTPException(422, f"unknown layer(s) {unknown}; known: {known}")
    return tuple(values or ())


def verdict_filter(values: list[str] | None) -> tuple[str, ...]:
    """The verdicts asked for; an unknown one is answered 422 with the known ones."""
    unknown = sorted(set(values or ()) - set(VERDICTS))
    if unknown:
        raise HTTPException(422, f"unknown verdict(s) {unknown}; known: {list(VERDICTS)}")
    return tuple(values or ())


def page_of(limit: int, offset: int, after: str | None) -> Page:
    """A page by offset or by cursor; asking for both is answered 422."""
    if after is not None and offset:
        raise HTTPException(422, "give offset or after, not both")
    return Page(limit, offset, after)


@contextmanager
def cursor_errors() -> Iterator[None]:
    """A cursor this list did not make is answered 422."""
    try:
        yield
    except InvalidCursor as error:
        raise HTTPException(422, f"after: {error}") from error


def journey_filter(
    since: Since = None,
    until: Until = None,
    agent: str | None = None,
    tool: str | None = None,
    verdict: Verdicts = None,
    layer: Layers = None,
) -> ReportFilter:
    """The filters every aggregate takes, from the query string."""
    return ReportFilter(
        verdicts=verdict_filter(verdict),
        agent=agent,
        tool=tool,
        since=since,
        until=until,
        layers=layer_filter(layer),
    )


FilterDep = Annotated[ReportFilter, Depends(journey_filter)]
