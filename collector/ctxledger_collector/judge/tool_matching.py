"""Tool spans that name no call id (OpenAI Agents SDK function spans, OpenInference
LangChain ``TOOL`` spans, OpenLLMetry's tool decorator), matched to the calls LLM
responses issued: by tool name and canonical arguments (the signature), then by order
within the trace (the k-th run of a signature answers its k-th call). The match is a
function of the whole set, whatever order the spans arrive in: each batch that brings
a call or a tool span of a signature matches that signature's group again. Matched
outputs become ``original`` measurements marked ``inferred``; reports say so.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import Connection

from ctxledger import semconv as sc
from ctxledger.verdicts import Measurement
from ctxledger.verdicts.duplicates import span_number
from ctxledger.verdicts.incremental import CallKey
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedMeasurement
from ctxledger_collector.storage.rows import MEASUREMENT_KEY
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import CALL_ISSUERS, MEASUREMENTS, UNMATCHED_TOOLS

_OUTPUT_COLUMNS = ("run_id", "span_number", "signature", "started_us", "measurement")
_TUPLES = ("item_ids", "fields", "markers_found")


def _document(stage: Measurement, text: str | None) -> str:
    document = dataclasses.asdict(stage)
    document["text"] = text
    return orjson.dumps(document).decode()


def _measurement(document: str) -> tuple[Measurement, str | None]:
    fields: dict[str, Any] = orjson.loads(document)
    text = fields.pop("text", None)
    for name in _TUPLES:
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    return Measurement(**fields), text


def pair(calls: list[tuple[int, str]], outputs: list[tuple[int, int]]) -> dict[int, str]:
    """Outputs (start time, span number) to calls (issue order, call id), in order."""
    return {out[1]: call[1] for out, call in zip(sorted(outputs), sorted(calls), strict=False)}


def match_tools(
    connection: Connection, sql: Statements, run_ids: Mapping[str, int], batch: DecodedBatch
) -> tuple[list[DecodedMeasurement], set[CallKey]]:
    """Store the batch's unmatched tool outputs, match every signature group the batch
    touched again; the matched measurements to store, and every call of those groups
    (to judge whole: a match may have moved)."""
    if not batch.issued and not batch.unmatched:
        return [], set()
    outputs = {
        (run_ids[u.stage.measurement.trace_id], span_number(u.stage.measurement.span_id)): (
            u.signature,
            u.started_us,
            _document(u.stage.measurement, u.stage.text),
        )
        for u in batch.unmatched
    }
    sql.insert_new(
        connection,
        UNMATCHED_TOOLS,
        _OUTPUT_COLUMNS,
        _OUTPUT_COLUMNS[:2],
        [(*key, *value) for key, value in sorted(outputs.items())],
    )
    groups = {(run_ids[i.trace_id], i.signature) for i in batch.issued} | {
        (key[0], value[0]) for key, value in outputs.items()
    }
    runs: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for run_id, signature, started, number in sql.select_keys(
        connection, UNMATCHED_TOOLS, ("run_id", "signature", "started_us", "span_number"),
        ("run_id", "signature"), sorted(groups), index="ix_unmatched_tools_signature",
    ):  # fmt: skip
        runs[(run_id, signature)].append((started, number))
    calls: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
    for run_id, signature, call_id, order in sql.select_keys(
        connection, CALL_ISSUERS, ("run_id", "signature", "tool_call_id", "issued_order"),
        ("run_id", "signature"), sorted(runs), index="ix_call_issuers_signature",
    ):  # fmt: skip
        calls[(run_id, signature)].append((order or 0, call_id))
    explicit, held = _originals(connection, sql, run_ids, calls, batch)
    traces = {run_id: trace_id for trace_id, run_id in run_ids.items()}
    moved: dict[tuple[int, int], str] = {}  # (run, span number) -> the call it now answers
    touched: set[CallKey] = set()
    stale: list[tuple[Any, ...]] = []
    for group, found in calls.items():
        run_id = group[0]
        candidates = [(order, c) for order, c in found if (run_id, c) not in explicit]
        answers = {c: n for n, c in pair(candidates, runs[group]).items()}
        for _, call_id in candidates:
            now, before = answers.get(call_id), held.get((run_id, call_id))
            if now == before:
                continue  # in-order arrivals leave earlier matches as they were
            touched.add((traces[run_id], call_id))
            if before is not None:
                stale.append((run_id, call_id, "", sc.STAGE_ORIGINAL))
            if now is not None:
                moved[(run_id, now)] = call_id
    sql.delete_keys(connection, MEASUREMENTS, MEASUREMENT_KEY, sorted(stale))
    matched: list[DecodedMeasurement] = []
    for run_id, number, document in sql.select_keys(
        connection, UNMATCHED_TOOLS, ("run_id", "span_number", "measurement"),
        ("run_id", "span_number"), sorted(moved),
    ):  # fmt: skip
        stage, text = _measurement(document)
        stage = dataclasses.replace(stage, tool_call_id=moved[(run_id, number)], inferred=True)
        content = {sc.CONTENT_TEXT: text} if text is not None else {}
        matched.append(DecodedMeasurement(stage, content, None))
    return matched, touched


def _originals(
    connection: Connection,
    sql: Statements,
    run_ids: Mapping[str, int],
    calls: Mapping[tuple[int, int], list[tuple[int, str]]],
    batch: DecodedBatch,
) -> tuple[set[tuple[int, str]], dict[tuple[int, str], int]]:
    """The calls whose tool span named them (their own ``original`` stage is never
    replaced by an inferred one), and the tool span each other call is matched to now."""
    keys = sorted(
        {(g[0], c, "", sc.STAGE_ORIGINAL) for g, found in calls.items() for _, c in found}
    )
    rows = sql.select_keys(
        connection,
        MEASUREMENTS,
        ("run_id", "tool_call_id", "inferred", "span_number"),
        MEASUREMENT_KEY,
        keys,
    )
    own = {(run_id, call_id) for run_id, call_id, inferred, _ in rows if not inferred}
    own.update(
        (run_ids[m.trace_id], m.tool_call_id)
        for m in (i.measurement for i in batch.measurements)
        if m.stage == sc.STAGE_ORIGINAL and m.request_id is None and not m.inferred
    )
    held = {(run_id, call_id): number for run_id, call_id, inferred, number in rows if inferred}
    return own, held
