"""The store keeps each compacted request's ``compacted`` stages in line with the request
just before it, whatever order the requests arrive in: a request arriving late between
the two, or a later copy that moves or no longer declares the compaction, changes them,
and the store judges like the whole set."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.judge.store import Store
from tests.collector.test_incremental_store import (
    Batches,
    expected_verdicts,
    fresh_traces,
    ingest,
    stored_verdicts,
)
from tests.sdk.test_incremental_judging import NOW

TRACE = "d" * 32
SUMMARY = "claude_code.summary:5f2c"


def _request(
    request_id: str, position: int, results: tuple[str, ...], **fields: object
) -> Manifest:
    return Manifest(
        TRACE, request_id, tool_call_ids=results, tool_calls=results, conversation="session",
        sequence=position, source=sc.SOURCE_CLAUDE_CODE, observed_at=900.0,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _original(call_id: str) -> Measurement:
    return Measurement(TRACE, call_id, sc.STAGE_ORIGINAL, 10, chars=400, observed_at=890.0)


BEFORE = _request("r1", 1, ("toolu_a", "toolu_b"))
BETWEEN = _request("r2", 2, ("toolu_b",))  # toolu_a already gone before the compaction
AFTER = _request("r3", 3, (), compaction=SUMMARY)


def _declared_in(verdicts: dict[tuple[str, str, str | None], tuple], request: str) -> set[str]:
    return {call for (_, call, req), v in verdicts.items() if req == request and v[0] == "declared"}


@pytest.mark.parametrize("order", list(itertools.permutations([BEFORE, BETWEEN, AFTER])))
def test_the_request_just_before_the_compaction_decides_whatever_arrives_first(
    store: Store, order: tuple[Manifest, ...]
) -> None:
    batches: Batches = [([_original("toolu_a"), _original("toolu_b")], [])]
    batches += [([], [manifest]) for manifest in order]
    batches = fresh_traces(batches)
    traces = ingest(store, batches, NOW)
    stored = stored_verdicts(store, traces)
    assert stored == expected_verdicts(batches, NOW)
    assert _declared_in(stored, "r3") == {"toolu_b"}  # toolu_a was not in r2


@pytest.mark.parametrize(
    "later_copy",
    [
        replace(AFTER, compaction=None, observed_at=950.0),  # no longer declares it
        replace(AFTER, sequence=0, observed_at=950.0),  # moved before the others
        replace(AFTER, tool_call_ids=("toolu_b",), tool_calls=("toolu_b",), observed_at=950.0),
    ],
    ids=["compaction-gone", "moved", "carries-it"],
)
def test_a_later_copy_of_the_compacted_request_takes_its_stages_back(
    store: Store, later_copy: Manifest
) -> None:
    batches = fresh_traces([([_original("toolu_b")], [BETWEEN]), ([], [AFTER]), ([], [later_copy])])
    first = ingest(store, batches[:2], NOW)
    assert _declared_in(stored_verdicts(store, first), "r3") == {"toolu_b"}
    traces = ingest(store, batches[2:], NOW)
    stored = stored_verdicts(store, traces)
    assert stored == expected_verdicts(batches, NOW)
    assert _declared_in(stored, "r3") == set()
