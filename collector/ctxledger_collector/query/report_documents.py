"""A report as the query API shows it: its row, the stages read from the measurements it
was judged from, and every transition (the lossy ones as stored, the rest intact)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Connection

from ctxledger import semconv as sc
from ctxledger.verdicts import LOSING_VERDICTS, layer_name
from ctxledger_collector.query.stage_reads import StageIndex, read_stages
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.stored_records import loads
from ctxledger_collector.storage.tables import FIRST_LOST_CONDITION

#: The report columns a document is built from (the select of every report query).
REPORT_FIELDS = (
    "run_id",
    "tool_call_id",
    "request_key",
    "verdict",
    "tool_name",
    "agent_name",
    "step",
    "settled",
    "lost_items",
    "lost_chars",
    "lost_tokens",
    "lost_priority_items",
    "last_observed_at",
    "judged_at",
    "lost_item_ids",
    "lost_fields",
    "notes",
    "transitions",
    "source",
    "layer",
    "first_lost",
    "lost_tokens_unknown",
)
#: (step, request key) of the journey where a call's result was first lost, by (run, call).
FirstLost = Mapping[tuple[int, str], tuple[int | None, str]]


def links(
    dashboard_url: str | None,
    trace_id: str,
    step: int | None = None,
    tool_call_id: str | None = None,
) -> dict[str, str]:
    """Deep links for a run, step or journey: the API's own and the dashboard's."""
    out = {"run": f"/api/v1/runs/{trace_id}"}
    if dashboard_url:
        query: dict[str, str] = {"trace_id": trace_id}
        if step is not None:
            query["step"] = str(step)
        if tool_call_id:
            query["tool_call_id"] = tool_call_id
        out["dashboard"] = f"{dashboard_url.rstrip('/')}/run?{urlencode(query)}"
    return out


def _intact(from_stage: str, to_stage: str) -> dict[str, Any]:
    return {
        "from_stage": from_stage,
        "to_stage": to_stage,
        "verdict": sc.VERDICT_INTACT,
        "lost_items": 0,
        "lost_item_ids": [],
        "lost_fields": [],
        "lost_chars": 0,
        "lost_tokens": 0,
        "lost_priority_items": 0,
        "reasons": [],
    }


def transitions(stages: Sequence[dict[str, Any]], lossy: Sequence[dict[str, Any]]) -> list[Any]:
    """Every consecutive pair of stages: as stored when it lost something, else intact."""
    stored = {(t["from_stage"], t["to_stage"]): t for t in lossy}
    return [
        stored.get((a["stage"], b["stage"])) or _intact(a["stage"], b["stage"])
        for a, b in pairwise(stages)
    ]


def stage_keys(rows: Sequence[Mapping[str, Any]]) -> set[tuple[int, str, str]]:
    """The measurement groups the reports were judged from: the call's own stages and
    the stages in the report's request."""
    keys: set[tuple[int, str, str]] = set()
    for row in rows:
        keys.add((row["run_id"], row["tool_call_id"], ""))
        if row["request_key"]:
            keys.add((row["run_id"], row["tool_call_id"], row["request_key"]))
    return keys


def report_document(
    row: Mapping[str, Any],
    trace_id: str,
    stage_index: StageIndex,
    dashboard_url: str | None,
    first_lost: FirstLost | None = None,
) -> dict[str, Any]:
    """A report row (``REPORT_FIELDS``) as the API answers it; ``first_lost`` holds where
    the results of its still-missing journeys were first lost."""
    own = stage_index.get((row["run_id"], row["tool_call_id"], ""), ())
    in_request = (
        stage_index.get((row["run_id"], row["tool_call_id"], row["request_key"]), ())
        if row["request_key"]
        else ()
    )
    stages = sorted([*own, *in_request], key=lambda s: (s["order"], s["stage"]))
    first = bool(row["first_lost"])
    first_step, first_request = (None, "")
    if first:
        first_step, first_request = row["step"], row["request_key"]
    elif row["verdict"] in LOSING_VERDICTS:
        first_step, first_request = (first_lost or {}).get(
            (row["run_id"], row["tool_call_id"]), (None, "")
        )
    still_missing = row["verdict"] in LOSING_VERDICTS and not first
    link_step = first_step if still_missing and first_step is not None else row["step"]
    return {
        "trace_id": trace_id,
        "tool_call_id": row["tool_call_id"],
        "tool_name": row["tool_name"],
        "request_id": row["request_key"] or None,
        "agent_name": row["agent_name"],
        "step": row["step"],
        "verdict": row["verdict"],
        "source": row["source"],
        "layer": row["layer"],
        "layer_name": layer_name(row["layer"]),
        "settled": bool(row["settled"]),
        "lost_items": row["lost_items"],
        "lost_item_ids": loads(row["lost_item_ids"]) or [],
        "lost_fields": loads(row["lost_fields"]) or [],
        "lost_chars": row["lost_chars"],
        # Unknown, not 0, when the stages counted tokens with different encodings.
        "lost_tokens": None if row["lost_tokens_unknown"] else row["lost_tokens"],
        "lost_tokens_unknown": row["lost_tokens_unknown"],
        "lost_priority_items": row["lost_priority_items"],
        "notes": loads(row["notes"]) or [],
        "stages": stages,
        "transitions": transitions(stages, loads(row["transitions"]) or []),
        "last_observed_at": row["last_observed_at"],
        "judged_at": row["judged_at"],
        "links": links(dashboard_url, trace_id, link_step, row["tool_call_id"]),
        "first_lost": first,
        "still_missing": still_missing,
        "first_lost_step": first_step,
        "first_lost_request_id": first_request or None,
    }


def first_lost_journeys(connection: Connection, calls: Collection[tuple[int, str]]) -> FirstLost:
    """Where each call's result was first lost, by the partial index of first lost
    journeys."""
    if not calls:
        return {}
    sql = Statements(connection.dialect.name)
    indexed = "" if sql.postgres else "INDEXED BY ix_reports_first_lost "
    rows = sql.per_key(
        connection,
        ("run_id", "tool_call_id"),
        sorted(calls),
        "SELECT t.run_id, t.tool_call_id, t.step, t.request_key "
        f"FROM v {sql.join_keys} reports t {indexed}"
        "ON t.run_id = v.run_id AND t.tool_call_id = v.tool_call_id "
        f"AND t.{FIRST_LOST_CONDITION}",
        ("tool_call_id",),
    )
    return {(run_id, call_id): (step, request) for run_id, call_id, step, request in rows}


def report_documents(
    connection: Connection,
    rows: Sequence[Mapping[str, Any]],
    trace_ids: Mapping[int, str],
    dashboard_url: str | None,
) -> list[dict[str, Any]]:
    """Many report rows as the API answers them, their stages read in one go."""
    index = read_stages(connection, stage_keys(rows)) if rows else {}
    missing = {
        (r["run_id"], r["tool_call_id"])
        for r in rows
        if r["verdict"] in LOSING_VERDICTS and not r["first_lost"]
    }
    first = first_lost_journeys(connection, missing)
    return [report_document(r, trace_ids[r["run_id"]], index, dashboard_url, first) for r in rows]
