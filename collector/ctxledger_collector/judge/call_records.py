"""Where each call was issued, as the store keeps it: the requests whose response issued
it (``call_issuers``, from manifests' ``issued_calls``) and its origin (``calls``: the
conversation and position the request that follows it is looked up from)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from ctxledger.verdicts import Manifest
from ctxledger.verdicts.incremental import CallKey, RequestKey
from ctxledger.verdicts.journeys import CallJudgment
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest
from ctxledger_collector.storage.rows import CALL_COLUMNS, CALL_KEY
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import CALL_ISSUERS, CALLS, COPY_KEY, MANIFESTS

ISSUER_COLUMNS = ("run_id", "tool_call_id", "request_id", "signature", "issued_order")
ISSUER_KEY = ISSUER_COLUMNS[:3]


def write_issuers(
    connection: Connection,
    sql: Statements,
    run_ids: Mapping[str, int],
    batch: DecodedBatch,
    keyed: Sequence[tuple[DecodedManifest, tuple[Any, ...]]],
    replaced: Mapping[RequestKey, Manifest],
) -> None:
    """The issuers of every manifest whose stored copy is now the batch's (the upsert
    already ran): the old copy's rows go, the new copy's come. ``keyed`` pairs each
    manifest of the batch with the copy key of the row built for it."""
    issued = [(i, key) for i, key in keyed if i.manifest.issued_calls or replaced]
    if not issued:
        return
    keys = sorted({(run_ids[i.manifest.trace_id], i.manifest.request_id) for i, _ in issued})
    stored = {
        (row[0], row[1]): tuple(row[2:])
        for row in sql.select_keys(
            connection,
            MANIFESTS,
            ("run_id", "request_id", *COPY_KEY),
            ("run_id", "request_id"),
            keys,
        )
    }
    signatures = {
        (i.trace_id, i.call_id, i.request_id): (i.signature, i.order) for i in batch.issued
    }
    gone: set[tuple[Any, ...]] = set()
    rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for item, copy_key in issued:
        man = item.manifest
        run_id = run_ids[man.trace_id]
        if stored.get((run_id, man.request_id)) != copy_key:
            continue  # a stored copy is preferred to this one
        old = replaced.get((man.trace_id, man.request_id))
        if old is not None:
            gone.update((run_id, c, man.request_id) for c in old.issued_calls or ())
        for call_id in man.issued_calls or ():
            found = signatures.get((man.trace_id, call_id, man.request_id), (None, None))
            rows[(run_id, call_id, man.request_id)] = (run_id, call_id, man.request_id, *found)
    sql.delete_keys(connection, CALL_ISSUERS, ISSUER_KEY, sorted(gone - rows.keys()))
    sql.upsert(connection, CALL_ISSUERS, ISSUER_COLUMNS, ISSUER_KEY, list(rows.values()))


def write_origins(
    connection: Connection,
    sql: Statements,
    run_ids: Mapping[str, int],
    judgments: Sequence[CallJudgment],
    whole: Collection[CallKey],
) -> None:
    """The origin of every call judged whole (the rest kept theirs); a call without one
    any more (its issuer was replaced) leaves the table."""
    rows: list[tuple[Any, ...]] = []
    gone: list[tuple[Any, ...]] = []
    assert CALL_COLUMNS == ("run_id", "tool_call_id", "call_step", "conversation")
    for j in judgments:
        if (j.trace_id, j.call_id) not in whole:
            continue
        run_id = run_ids[j.trace_id]
        if j.origin is None:
            gone.append((run_id, j.call_id))
        else:
            rows.append((run_id, j.call_id, j.origin[1], j.origin[0]))
    sql.delete_keys(connection, CALLS, CALL_KEY, gone)
    sql.upsert(connection, CALLS, CALL_COLUMNS, CALL_KEY, rows)
