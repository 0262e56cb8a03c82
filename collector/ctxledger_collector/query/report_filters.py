"""Which reports a query asks for: the filters of the query API, as SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select

from ctxledger.verdicts import LAYERS, OTHER_LAYER
from ctxledger_collector.query.report_documents import REPORT_FIELDS
from ctxledger_collector.storage.tables import REPORTS, RUNS


@dataclass(frozen=True)
class ReportFilter:
    trace_id: str | None = None
    verdicts: tuple[str, ...] = ()
    agent: str | None = None
    tool: str | None = None
    tool_call_id: str | None = None
    since: float | None = None
    until: float | None = None
    #: True: only the journeys where a result was first lost (each lost result once);
    #: False: every other journey; None: both.
    first_lost: bool | None = None
    #: Short layer names (``ctxledger.verdicts.LAYERS``): only journeys whose worst
    #: finding sits in one of them.
    layers: tuple[str, ...] = ()


def report_columns() -> list[ColumnElement[Any]]:
    return [REPORTS.c.id, *(REPORTS.c[name] for name in REPORT_FIELDS), RUNS.c.trace_id]


def with_runs(query: Select[Any]) -> Select[Any]:
    return query.join_from(REPORTS, RUNS, RUNS.c.id == REPORTS.c.run_id)


def filtered(query: Select[Any], f: ReportFilter) -> Select[Any]:
    """``query`` (over reports joined with runs) narrowed by ``f``."""
    if f.trace_id:
        query = query.where(RUNS.c.trace_id == f.trace_id)
    if f.verdicts:
        query = query.where(REPORTS.c.verdict.in_(f.verdicts))
    if f.agent:
        # The contract names the agent by gen_ai.agent.name, else service.name: match
        # either, as /api/v1/runs does.
        query = query.where((REPORTS.c.agent_name == f.agent) | (RUNS.c.service_name == f.agent))
    if f.tool:
        query = query.where(REPORTS.c.tool_name == f.tool)
    if f.tool_call_id:
        query = query.where(REPORTS.c.tool_call_id == f.tool_call_id)
    if f.since is not None:
        query = query.where(REPORTS.c.last_observed_at >= f.since)
    if f.until is not None:
        query = query.where(REPORTS.c.last_observed_at < f.until)
    if f.first_lost is not None:
        query = query.where(REPORTS.c.first_lost == f.first_lost)
    if f.layers:
        query = query.where(in_layers(REPORTS.c.layer, f.layers))
    return query


def in_layers(layer: ColumnElement[Any], names: tuple[str, ...]) -> ColumnElement[bool]:
    """``layer`` (a layer sentence, as ``reports.layer`` and the counters hold it; NULL or
    ``''`` for none) is one of the short layer ``names``."""
    condition: ColumnElement[bool] = layer.in_([LAYERS[n] for n in names if n != OTHER_LAYER])
    if OTHER_LAYER in names:
        known = [*LAYERS.values(), ""]
        condition = condition | (layer.is_not(None) & layer.not_in(known))
    return condition
