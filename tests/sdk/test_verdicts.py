"""The verdict rules (contract section 4): golden cases from the seeds, then properties.

Golden figures come from the engineering write-ups in /work/shared/seeds/:
seed 004 (50 retrieved records, a context manager trimming at 16,000 chars, the model
sees 20), seed 000 (a 200-record, 28,418-char order result cut three ways) and seed 001
(an emergency trim that replaces a result by a placeholder instead of deleting it).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger import semconv
from ctxledger.verdicts import (
    VERDICT_SEVERITY,
    VERDICTS,
    Manifest,
    Measurement,
    Report,
    Tolerances,
    compare,
    judge_trace,
    worst,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALL = "call_1"

INTACT = semconv.VERDICT_INTACT
DECLARED = semconv.VERDICT_DECLARED
INCOMPLETE = semconv.VERDICT_INCOMPLETE
UNMARKED = semconv.VERDICT_UNMARKED
SILENT = semconv.VERDICT_SILENT
DROPPED = semconv.VERDICT_DROPPED
ORPHANED = semconv.VERDICT_ORPHANED

#: The placeholder of seed 001, as the model sees it.
EMERGENCY_PLACEHOLDER = (
    "[removed by emergency context trim to recover from a context-length-exceeded error; "
    "re-run the tool if the result is still needed]"
)


# --- builders ------------------------------------------------------------------------


def stage(name: str, call: str = CALL, *, request: str | None = None, **kw) -> Measurement:
    """A measurement with defaults: built-in order, 1,000 chars, the test trace."""
    kw.setdefault("order", semconv.BUILTIN_STAGE_ORDER.get(name, 35))
    kw.setdefault("chars", 1000)
    return Measurement(trace_id=TRACE, tool_call_id=call, stage=name, request_id=request, **kw)


def manifest(
    request: str,
    step: int | None = None,
    *,
    results: tuple[str, ...] = (),
    calls: tuple[str, ...] | None = None,
    **kw,
) -> Manifest:
    """A request manifest: ``results`` are tool_call_ids, ``calls`` are tool_calls."""
    return Manifest(
        trace_id=TRACE, request_id=request, step=step, tool_call_ids=results, tool_calls=calls, **kw
    )


def ids(first: int, last: int, prefix: str = "ord-") -> tuple[str, ...]:
    """Item ids ``prefix001`` .. ``prefixNNN`` (inclusive)."""
    return tuple(f"{prefix}{i:03d}" for i in range(first, last + 1))


def only(reports: list[Report], call: str = CALL, request: str | None = None) -> Report:
    matches = [r for r in reports if r.tool_call_id == call and r.request_id == request]
    assert len(matches) == 1, [r.key for r in reports]
    return matches[0]


def summary(reports: list[Report]) -> tuple:
    return tuple(
        (
            r.key,
            r.verdict,
            r.lost_items,
            r.lost_item_ids,
            r.lost_fields,
            r.lost_chars,
            r.lost_tokens,
            r.lost_priority_items,
            r.settled,
        )
        for r in reports
    )


def severity(verdict: str) -> int:
    return VERDICT_SEVERITY[verdict]


# --- the verdict scale ---------------------------------------------------------------


def test_severity_scale_is_the_documented_one():
    assert VERDICTS == (
        INTACT,
        DECLARED,
        INCOMPLETE,
        semconv.VERDICT_UNAUDITABLE,
        UNMARKED,
        SILENT,
        DROPPED,
        ORPHANED,
    )
    assert worst([]) == INTACT
    assert worst([DECLARED, ORPHANED, SILENT]) == ORPHANED
    assert worst([UNMARKED, INCOMPLETE, DECLARED]) == UNMARKED


# --- seed 004: 50 records, the model sees 20 -----------------------------------------

ROW = 800  # chars per serialized record: 20 records fill the manager's 16,000 chars


def seed004_stages(**assembled_kw) -> list[Measurement]:
    common = {"tool_name": "search_kb", "tokenizer": "cl100k_base"}
    return [
        stage(
            "original",
            items=50,
            item_ids=ids(1, 50),
            chars=50 * ROW,
            tokens=26_000,
            sha256="raw",
            step=1,
            observed_at=1.0,
            **common,
        ),
        stage(
            "serialized",
            items=50,
            item_ids=ids(1, 50),
            chars=50 * ROW,
            tokens=26_000,
            sha256="ser50",
            step=1,
            observed_at=2.0,
            **common,
        ),
        stage(
            "assembled",
            request="r2",
            items=20,
            item_ids=ids(1, 20),
            chars=20 * ROW,
            tokens=10_400,
            sha256="ser20",
            step=2,
            observed_at=3.0,
            **{**common, **assembled_kw},
        ),
        stage(
            "sent",
            request="r2",
            items=20,
            item_ids=ids(1, 20),
            chars=20 * ROW,
            tokens=10_400,
            sha256="ser20",
            step=2,
            observed_at=4.0,
            **common,
        ),
    ]


def test_seed004_context_manager_silently_keeps_20_of_50():
    reports = judge_trace(
        seed004_stages(), [manifest("r2", 2, results=(CALL,), calls=(CALL,))], now=10_000.0
    )
    report = only(reports, request="r2")
    assert [r.key for r in reports] == [(TRACE, CALL, "r2")]
    assert report.verdict == SILENT
    assert report.lost_items == 30
    assert report.lost_item_ids == ids(21, 50)
    assert report.lost_chars == 30 * ROW
    assert report.lost_tokens == 15_600
    assert report.settled
    assert report.tool_name == "search_kb"
    assert [(t.from_stage, t.to_stage, t.verdict) for t in report.transitions] == [
        ("original", "serialized", INTACT),
        ("serialized", "assembled", SILENT),
        ("assembled", "sent", INTACT),
    ]


@pytest.mark.parametrize(
    ("flags", "verdict"),
    [
        ({"declared": True, "marker": True, "strategy": "head_rows"}, DECLARED),
        ({"declared": True, "strategy": "head_rows"}, UNMARKED),
        ({"markers_found": ("truncated_en",)}, DECLARED),
        ({}, SILENT),
    ],
)
def test_seed004_the_same_cut_is_judged_by_what_the_model_sees(flags, verdict):
    reports = judge_trace(seed004_stages(**flags), [manifest("r2", 2, results=(CALL,))])
    assert only(reports, request="r2").verdict == verdict


def test_seed004_lost_item_ids_keep_the_original_order_and_are_not_double_counted():
    # A later stage loses 5 more: ids of both transitions, each once, in pipeline order.
    stages = seed004_stages()
    stages[3] = replace(stages[3], items=15, item_ids=ids(1, 15), chars=15 * ROW, sha256="s15")
    report = only(judge_trace(stages), request="r2")
    assert report.lost_item_ids == ids(21, 50) + ids(16, 20)
    assert report.lost_items == 35


# --- seed 000: one 200-record result cut three ways ----------------------------------

ORDERS_CHARS = 28_418
KEY_FACT_ROWS = 10  # must-keep rows planted in the 200


def seed000_stages(**assembled_kw) -> list[Measurement]:
    full = {
        "items": 200,
        "item_ids": ids(1, 200),
        "chars": ORDERS_CHARS,
        "json_valid": True,
        "priority_items": KEY_FACT_ROWS,
        "tool_name": "order.query",
    }
    return [
        stage("original", sha256="orders", step=1, **full),
        stage("serialized", sha256="orders", step=1, **full),
        stage("assembled", request="r2", step=2, **assembled_kw),
        stage("sent", request="r2", step=2, **assembled_kw),
    ]


def judge_seed000(**assembled_kw) -> Report:
    reports = judge_trace(
        seed000_stages(**assembled_kw), [manifest("r2", 2, results=(CALL,), calls=(CALL,))]
    )
    return only(reports, request="r2")


def test_seed000_raw_2000_char_cut_breaks_json_and_is_silent():
    report = judge_seed000(
        chars=2000,
        items=17,
        item_ids=ids(1, 17),
        json_valid=False,
        priority_items=1,
        sha256="cut2000",
    )
    assert report.verdict == SILENT
    assert report.lost_items == 183
    assert report.lost_item_ids == ids(18, 200)
    assert report.lost_chars == ORDERS_CHARS - 2000
    assert report.lost_priority_items == KEY_FACT_ROWS - 1


def test_seed000_first_20_rows_with_a_marker_is_declared():
    report = judge_seed000(
        chars=2951,
        items=20,
        item_ids=ids(1, 20),
        json_valid=True,
        priority_items=2,
        sha256="rows20",
        declared=True,
        strategy="head_rows",
        marker=True,
    )
    assert report.verdict == DECLARED
    assert report.lost_items == 180
    assert report.lost_item_ids == ids(21, 200)
    assert report.lost_chars == ORDERS_CHARS - 2951
    assert report.lost_priority_items == 8


def test_seed000_first_20_rows_declared_without_a_marker_is_unmarked():
    report = judge_seed000(
        chars=2951,
        items=20,
        item_ids=ids(1, 20),
        json_valid=True,
        priority_items=2,
        sha256="rows20",
        declared=True,
        strategy="head_rows",
    )
    assert report.verdict == UNMARKED
    assert report.lost_items == 180


def test_seed000_structured_keep_reports_the_must_keep_rows_it_lost():
    # Anomaly rows + head 5 + tail 3 packed into the budget: 12 rows, 1,884 chars, 6/10 facts.
    kept = (*ids(1, 5), "ord-031", "ord-077", "ord-120", "ord-164", *ids(198, 200))
    report = judge_seed000(
        chars=1884,
        items=12,
        item_ids=kept,
        json_valid=True,
        priority_items=6,
        sha256="structured",
        declared=True,
        strategy="structured",
        marker=True,
    )
    assert report.verdict == DECLARED
    assert report.lost_items == 188
    assert len(report.lost_item_ids) == 188
    assert not set(kept) & set(report.lost_item_ids)
    assert report.lost_priority_items == 4


def test_losing_only_must_keep_items_is_a_loss():
    report = judge_seed000(
        chars=ORDERS_CHARS, items=200, item_ids=ids(1, 200), priority_items=9, sha256="other"
    )
    assert report.verdict == SILENT
    assert report.lost_priority_items == 1
    assert report.lost_items == 0


# --- seed 001: emergency trim, placeholder versus deletion ---------------------------


def seed001_stages() -> list[Measurement]:
    log = {"items": 600, "chars": 48_000, "tool_name": "run_shell", "sha256": "log"}
    placeholder = {
        "items": 1,
        "chars": len(EMERGENCY_PLACEHOLDER),
        "sha256": "placeholder",
        "declared": True,
        "strategy": "emergency_trim",
        "markers_found": ("emergency_trim",),
    }
    return [
        stage("original", step=1, **log),
        stage("serialized", step=1, **log),
        stage("assembled", request="r2", step=2, **placeholder),
        stage("sent", request="r2", step=2, **placeholder),
    ]


def test_seed001_placeholder_keeps_pairing_and_is_declared():
    reports = judge_trace(
        seed001_stages(), [manifest("r2", 2, results=(CALL, "call_0"), calls=("call_0", CALL))]
    )
    report = only(reports, request="r2")
    assert report.verdict == DECLARED
    assert report.lost_items == 599
    assert report.lost_chars == 48_000 - len(EMERGENCY_PLACEHOLDER)
    assert not any("without" in note for note in report.notes)
    assert only(reports, call="call_0", request="r2").verdict == INTACT


def test_seed001_deleting_the_result_orphans_its_call():
    stages = seed001_stages()[:2]  # the result never reaches r2: the trim deleted it
    reports = judge_trace(stages, [manifest("r2", 2, results=("call_0",), calls=("call_0", CALL))])
    report = only(reports, request="r2")
    assert report.verdict == ORPHANED
    assert any("without its result" in note for note in report.notes)
    # The result vanished from r2: all of it is lost, as for a dropped result.
    assert (report.lost_items, report.lost_chars) == (600, 48_000)
    assert only(reports, call="call_0", request="r2").verdict == INTACT


def test_a_result_without_its_call_is_orphaned():
    reports = judge_trace(seed001_stages(), [manifest("r2", 2, results=(CALL,), calls=())])
    report = only(reports, request="r2")
    assert report.verdict == ORPHANED
    assert any("without its call" in note for note in report.notes)


def test_orphaned_outranks_a_declared_placeholder():
    reports = judge_trace(seed001_stages(), [manifest("r2", 2, results=(), calls=(CALL,))])
    assert only(reports, request="r2").verdict == ORPHANED


def test_unknown_tool_calls_cannot_prove_an_orphan():
    # tool_calls=None: the manifest did not list calls, so a result alone is fine.
    reports = judge_trace(seed001_stages(), [manifest("r2", 2, results=(CALL,))])
    assert only(reports, request="r2").verdict == DECLARED


# --- dropped: the whole result vanishes ----------------------------------------------


def measured_before_request() -> list[Measurement]:
    return [
        stage("original", items=50, chars=40_000, tokens=26_000, sha256="a", step=1),
        stage("serialized", items=50, chars=40_000, tokens=26_000, sha256="a", step=1),
    ]


def test_a_trimming_context_manager_drops_the_whole_result_from_the_next_request():
    manifests = [
        manifest("r1", 1, results=(), calls=()),  # its response issued the call
        manifest("r2", 2, results=("call_9",), calls=("call_9",)),  # neither call nor result
    ]
    reports = judge_trace(measured_before_request(), manifests)
    assert [r.key for r in reports if r.tool_call_id == CALL] == [(TRACE, CALL, "r2")]
    report = only(reports, request="r2")
    assert report.verdict == DROPPED
    assert report.lost_items == 50
    assert report.lost_chars == 40_000
    assert report.lost_tokens == 26_000
    assert any("missing from request r2" in note for note in report.notes)


def test_dropped_after_assembly_into_a_later_request():
    stages = [
        *measured_before_request(),
        stage("assembled", request="r3", items=50, chars=40_000, sha256="a", step=3),
    ]
    manifests = [
        manifest("r2", 2, results=(CALL,), calls=(CALL,)),
        manifest("r3", 3, results=(), calls=()),
    ]
    reports = judge_trace(stages, manifests)
    assert only(reports, request="r2").verdict == INTACT
    assert only(reports, request="r3").verdict == DROPPED


def test_old_results_leaving_later_requests_are_not_judged():
    # Older history trimmed from r3 is the agent's business: no journey there.
    manifests = [
        manifest("r2", 2, results=(CALL,), calls=(CALL,)),
        manifest("r3", 3, results=(), calls=()),
    ]
    reports = judge_trace(measured_before_request(), manifests)
    assert [r.key for r in reports] == [(TRACE, CALL, "r2")]
    assert reports[0].verdict == INTACT


def test_a_removal_declared_with_a_marker_in_that_request_is_declared():
    stages = [
        *measured_before_request(),
        stage(
            "assembled",
            request="r2",
            items=0,
            chars=0,
            sha256="gone",
            step=2,
            declared=True,
            marker=True,
            strategy="other",
        ),
    ]
    reports = judge_trace(stages, [manifest("r2", 2, results=(), calls=())])
    assert only(reports, request="r2").verdict == DECLARED


def test_a_declared_partial_cut_does_not_excuse_the_result_vanishing_afterwards():
    stages = [
        *measured_before_request(),
        stage(
            "assembled",
            request="r2",
            items=20,
            chars=16_000,
            sha256="b",
            step=2,
            declared=True,
            marker=True,
            strategy="head_rows",
        ),
    ]
    # The manifest of what was actually sent has neither the call nor its result.
    reports = judge_trace(stages, [manifest("r2", 2, results=(), calls=())])
    assert only(reports, request="r2").verdict == DROPPED


def test_a_removal_declared_without_a_marker_is_unmarked():
    # Only the request's own stage was measured: no earlier transition hides the finding.
    removed = stage("assembled", request="r2", items=0, chars=0, step=2, declared=True)
    reports = judge_trace([removed], [manifest("r2", 2, results=(), calls=())])
    assert only(reports, request="r2").verdict == UNMARKED


# --- re-formatting is not loss --------------------------------------------------------


def test_reformatting_with_the_same_canonical_digest_is_intact():
    # original used ensure_ascii escapes (\uXXXX, 6 chars per CJK char): chars fall 80%.
    stages = [
        stage(
            "original",
            chars=12_000,
            tokens=9_000,
            tokenizer="o200k_base",
            sha256="escaped",
            canonical_sha256="canon",
            canonical_chars=2_400,
            items=30,
        ),
        stage(
            "serialized",
            chars=2_400,
            tokens=1_700,
            tokenizer="o200k_base",
            sha256="plain",
            canonical_sha256="canon",
            canonical_chars=2_400,
            items=30,
        ),
        stage(
            "sent",
            request="r2",
            chars=2_400,
            tokens=1_700,
            tokenizer="o200k_base",
            sha256="plain",
            canonical_sha256="canon",
            canonical_chars=2_400,
            items=30,
        ),
    ]
    report = only(judge_trace(stages, [manifest("r2", 2, results=(CALL,))]), request="r2")
    assert report.verdict == INTACT
    assert report.lost_chars == 0
    assert report.lost_tokens == 0


def test_escaping_explained_by_canonical_chars_is_not_loss():
    # No canonical digest (e.g. a key order changed too), but the canonical sizes agree.
    prev = stage("original", chars=12_000, tokens=9_000, sha256="x", canonical_chars=2_400)
    cur = stage("serialized", chars=2_400, tokens=1_700, sha256="y", canonical_chars=2_398)
    assert compare(prev, cur, Tolerances()).verdict == INTACT


def test_the_same_fall_without_canonical_evidence_is_silent():
    prev = stage("original", chars=12_000, tokens=9_000, sha256="x")
    cur = stage("serialized", chars=2_400, tokens=1_700, sha256="y")
    transition = compare(prev, cur, Tolerances())
    assert transition.verdict == SILENT
    assert transition.lost_chars == 9_600
    assert transition.lost_tokens == 7_300


def test_equal_digests_are_intact_whatever_the_sizes_and_flags():
    prev = stage("serialized", chars=5_000, items=10, item_ids=ids(1, 10), sha256="same")
    cur = stage("assembled", chars=10, items=0, item_ids=(), sha256="same", declared=True)
    assert compare(prev, cur, Tolerances()).verdict == INTACT


# --- fields dropped from every item ---------------------------------------------------


FIELDS = ("amount", "id", "note", "status")


def test_fields_dropped_from_every_item_is_silent_loss():
    stages = [
        stage("serialized", items=50, item_ids=ids(1, 50), chars=10_000, fields=FIELDS, sha256="a"),
        stage(
            "assembled",
            request="r2",
            items=50,
            item_ids=ids(1, 50),
            chars=9_900,
            fields=("amount", "id", "status"),
            sha256="b",
        ),
    ]
    report = only(judge_trace(stages, [manifest("r2", 2, results=(CALL,))]), request="r2")
    assert report.verdict == SILENT
    assert report.lost_fields == ("note",)
    assert report.lost_items == 0
    assert report.lost_item_ids == ()


def test_a_capped_field_list_proves_nothing():
    prev = stage("serialized", items=50, fields=FIELDS, sha256="a")
    cur = stage("assembled", items=50, fields=("amount",), fields_complete=False, sha256="b")
    assert compare(prev, cur, Tolerances()).verdict == INTACT


def test_fields_of_an_untrusted_span_are_not_trusted():
    prev = stage("serialized", items=50, fields=FIELDS, sha256="a")
    cur = stage("assembled", items=50, fields=("amount", "id"), sha256="b", dropped_attributes=1)
    transition = compare(prev, cur, Tolerances())
    assert transition.lost_fields == ()
    assert transition.verdict == INTACT


def test_item_ids_of_an_untrusted_or_capped_span_are_not_trusted():
    prev = stage("serialized", items=50, item_ids=ids(1, 50), sha256="a")
    capped = stage("assembled", items=50, item_ids=ids(1, 10), ids_complete=False, sha256="b")
    untrusted = replace(capped, ids_complete=True, dropped_attributes=2, request_id="r2")
    assert compare(prev, capped, Tolerances()).verdict == INTACT
    report = only(judge_trace([prev, untrusted], [manifest("r2", results=(CALL,))]), request="r2")
    assert report.verdict == INTACT
    assert report.lost_item_ids == ()
    assert any("lost 2 attributes" in note for note in report.notes)


def test_a_missing_id_is_loss_even_when_the_count_holds():
    prev = stage("serialized", items=3, item_ids=("a", "b", "c"), sha256="1")
    cur = stage("assembled", items=3, item_ids=("a", "b", "z"), sha256="2")
    transition = compare(prev, cur, Tolerances())
    assert transition.verdict == SILENT
    assert transition.lost_item_ids == ("c",)
    assert transition.lost_items == 1


# --- tolerances -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        (1000, 980, INTACT),  # 2% of 1000 = 20: not beyond
        (1000, 979, SILENT),
        (200, 184, INTACT),  # the 16-char floor wins over 2% of 200
        (200, 183, SILENT),
    ],
)
def test_chars_tolerance_boundary(before, after, verdict):
    prev = stage("serialized", chars=before, sha256="1")
    cur = stage("assembled", chars=after, sha256="2")
    assert compare(prev, cur, Tolerances()).verdict == verdict


def test_tokens_count_only_with_the_same_tokenizer():
    prev = stage("serialized", chars=1000, tokens=1000, tokenizer="cl100k_base", sha256="1")
    same = stage("assembled", chars=1000, tokens=900, tokenizer="cl100k_base", sha256="2")
    other = replace(same, tokenizer="o200k_base")
    assert compare(prev, same, Tolerances()).verdict == SILENT
    assert compare(prev, same, Tolerances()).lost_tokens == 100
    assert compare(prev, other, Tolerances()).verdict == INTACT


def test_tolerances_are_configurable():
    prev = stage("serialized", chars=1000, sha256="1")
    cur = stage("assembled", chars=600, sha256="2")
    assert compare(prev, cur, Tolerances()).verdict == SILENT
    assert compare(prev, cur, Tolerances(chars_ratio=0.5)).verdict == INTACT


# --- incomplete versus not yet settled -------------------------------------------------


def early_stages(**kw) -> list[Measurement]:
    return [
        stage("original", chars=1000, sha256="a", observed_at=1000.0, **kw),
        stage("serialized", chars=1000, sha256="a", observed_at=1001.0, **kw),
    ]


def test_waiting_for_later_stages_is_unsettled_then_incomplete():
    grace = Tolerances().incomplete_after_s
    unsettled = only(judge_trace(early_stages(), now=1001.0 + grace - 0.5))
    assert (unsettled.verdict, unsettled.settled) == (INTACT, False)
    assert only(judge_trace(early_stages())).settled is False  # no clock, no verdict
    late = only(judge_trace(early_stages(), now=1001.0 + grace))
    assert (late.verdict, late.settled) == (INCOMPLETE, True)


def test_grace_period_is_configurable():
    report = only(
        judge_trace(early_stages(), now=1011.0, tolerances=Tolerances(incomplete_after_s=10))
    )
    assert report.verdict == INCOMPLETE


def test_an_unsettled_loss_is_already_reported():
    stages = early_stages()
    stages[1] = replace(stages[1], chars=100, sha256="b")
    report = only(judge_trace(stages, now=1002.0))
    assert (report.verdict, report.settled) == (SILENT, False)


def test_reaching_sent_or_a_manifest_settles_the_journey():
    sent = stage("sent", request="r2", chars=1000, sha256="a", observed_at=1002.0)
    report = only(judge_trace([*early_stages(), sent], now=1_000_000.0), request="r2")
    assert (report.verdict, report.settled) == (INTACT, True)
    listed = judge_trace(early_stages(), [manifest("r2", results=(CALL,))], now=1_000_000.0)
    assert (only(listed, request="r2").verdict, only(listed, request="r2").settled) == (
        INTACT,
        True,
    )


def test_an_assembled_stage_without_its_manifest_goes_incomplete():
    assembled = stage("assembled", request="r2", chars=1000, sha256="a", observed_at=1002.0)
    report = only(judge_trace([*early_stages(), assembled], now=5000.0), request="r2")
    assert report.verdict == INCOMPLETE


# --- journeys --------------------------------------------------------------------------


def test_stages_before_any_request_belong_to_every_request_journey():
    stages = [
        stage("serialized", items=10, chars=5000, sha256="full", step=1),
        stage("assembled", request="r2", items=10, chars=5000, sha256="full", step=2),
        stage("assembled", request="r3", items=4, chars=2000, sha256="cut", step=3),
    ]
    manifests = [manifest("r2", 2, results=(CALL,)), manifest("r3", 3, results=(CALL,))]
    reports = judge_trace(stages, manifests)
    assert [(r.request_id, r.verdict) for r in reports] == [("r2", INTACT), ("r3", SILENT)]
    assert [s.stage for s in only(reports, request="r3").stages] == ["serialized", "assembled"]


def test_tool_call_ids_filter_the_journeys():
    stages = [*early_stages(), *early_stages(tool_name="x")]
    stages[2:] = [replace(s, tool_call_id="call_2") for s in stages[2:]]
    assert {r.tool_call_id for r in judge_trace(stages)} == {CALL, "call_2"}
    assert {r.tool_call_id for r in judge_trace(stages, tool_call_ids=["call_2"])} == {"call_2"}


# --- properties ------------------------------------------------------------------------

CALLS = ("c0", "c1", "c2")
REQUESTS = {"r1": 1, "r2": 2, "r3": 3, "r4": 4}
IN_REQUEST_STAGES = (("assembled", 30), ("compact", 35), ("sent", 40))


@st.composite
def measurements_of(draw, call: str, name: str, order: int, request: str | None):
    item_ids = draw(st.none() | st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8))
    items = len(item_ids) if item_ids is not None else draw(st.none() | st.integers(0, 8))
    return stage(
        name,
        call,
        request=request,
        order=order,
        chars=draw(st.integers(0, 3000)),
        tokens=draw(st.none() | st.integers(0, 1000)),
        tokenizer=draw(st.sampled_from([None, "cl100k_base", "o200k_base"])),
        canonical_chars=draw(st.none() | st.integers(0, 3000)),
        items=items,
        item_ids=tuple(item_ids) if item_ids is not None else None,
        ids_complete=draw(st.booleans()),
        fields=draw(st.none() | st.lists(st.sampled_from("xyz"), unique=True).map(tuple)),
        fields_complete=draw(st.booleans()),
        priority_items=draw(st.none() | st.integers(0, 3)),
        sha256=draw(st.sampled_from([None, "h1", "h2", "h3"])),
        canonical_sha256=draw(st.sampled_from([None, "k1", "k2"])),
        declared=draw(st.booleans()),
        marker=draw(st.booleans()),
        markers_found=draw(st.sampled_from([(), ("emergency_trim",)])),
        dropped_attributes=draw(st.sampled_from([0, 0, 0, 1])),
        tokens_estimated=draw(st.booleans()),
        tool_name=draw(st.sampled_from([None, "search", "shell"])),
        step=draw(st.sampled_from([None, 1, 2, 3])) if request is None else REQUESTS[request],
        observed_at=draw(st.sampled_from([0.0, 10.0, 20.0, 300.0])),
        span_id=draw(st.sampled_from([None, "s1", "s2"])),
    )


@st.composite
def traces(draw):
    """Several calls and requests, random stages (some measured twice, differently)."""
    measurements: list[Measurement] = []
    for call in draw(st.lists(st.sampled_from(CALLS), unique=True, min_size=1)):
        slots = [("original", 10, None), ("serialized", 20, None)]
        for request in draw(st.lists(st.sampled_from(sorted(REQUESTS)), unique=True)):
            slots += [(name, order, request) for name, order in IN_REQUEST_STAGES]
        for name, order, request in slots:
            copies = draw(st.sampled_from([0, 1, 1, 1, 2]))
            for _ in range(copies):
                measurements.append(draw(measurements_of(call, name, order, request)))
    manifests = [
        Manifest(
            trace_id=TRACE,
            request_id=request,
            step=REQUESTS[request],
            tool_call_ids=tuple(draw(st.lists(st.sampled_from(CALLS), unique=True))),
            tool_calls=draw(st.none() | st.lists(st.sampled_from(CALLS), unique=True).map(tuple)),
            observed_at=draw(st.sampled_from([0.0, 10.0])),
            span_id=draw(st.sampled_from([None, "m1", "m2"])),
        )
        for request in draw(st.lists(st.sampled_from(sorted(REQUESTS) * 2), max_size=6))
    ]
    now = draw(st.sampled_from([None, 15.0, 1000.0]))
    return measurements, manifests, now


PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(traces(), st.data())
def test_verdicts_depend_only_on_the_set_of_measurements(trace, data):
    measurements, manifests, now = trace
    expected = judge_trace(measurements, manifests, now=now)

    extra_m = data.draw(st.lists(st.sampled_from(measurements), max_size=5)) if measurements else []
    extra_f = data.draw(st.lists(st.sampled_from(manifests), max_size=3)) if manifests else []
    shuffled_m = data.draw(st.permutations(measurements + extra_m))
    shuffled_f = data.draw(st.permutations(manifests + extra_f))
    actual = judge_trace(iter(shuffled_m), iter(shuffled_f), now=now)

    assert summary(actual) == summary(expected)
    assert actual == expected  # stages, transitions and notes too


@PROPERTY_SETTINGS
@given(st.data())
def test_a_journey_whose_stages_share_one_digest_is_intact(data):
    names = data.draw(
        st.lists(st.sampled_from(["original", "serialized", "assembled", "compact"]), unique=True)
    )
    stages = [
        replace(
            data.draw(measurements_of(CALL, name, order, None if order < 30 else "r2")),
            sha256="same",
        )
        for name, order in sorted(
            [(n, semconv.BUILTIN_STAGE_ORDER.get(n, 35)) for n in names] + [("sent", 40)],
            key=lambda pair: pair[1],
        )
    ]
    reports = judge_trace(stages, [manifest("r2", results=(CALL,), calls=(CALL,))], now=1e9)
    assert [r.key for r in reports] == [(TRACE, CALL, "r2")]
    assert reports[0].verdict == INTACT
    assert reports[0].lost_items == reports[0].lost_chars == reports[0].lost_tokens == 0


@PROPERTY_SETTINGS
@given(traces(), st.data())
def test_adding_a_loss_never_makes_a_verdict_less_severe(trace, data):
    measurements, manifests, _ = trace
    # No clock: a journey waiting for its stages is unsettled, never ``incomplete``, so the
    # arrival of a late (declared) stage cannot lower incomplete to declared.
    before = judge_trace(measurements, manifests)
    journeys = [r for r in before if r.stages]
    if not journeys:
        return
    report = data.draw(st.sampled_from(journeys))
    last = report.stages[-1]
    declared = data.draw(st.booleans())
    if declared and report.verdict == DROPPED:
        # A stage that declares removing the whole result explains its disappearance,
        # so it rightly turns ``dropped`` into a declared loss: not a counterexample.
        declared = False
    loss = stage(
        "later_trim",
        report.tool_call_id,
        request=report.request_id,
        order=max(s.order for s in report.stages) + 1,
        chars=0,
        items=0 if last.items is not None else None,
        item_ids=() if last.item_ids is not None else None,
        sha256="lossy",
        declared=declared,
        marker=data.draw(st.booleans()),
        observed_at=last.observed_at,
    )
    after = judge_trace([*measurements, loss], manifests)
    new = only(after, report.tool_call_id, report.request_id)
    lossy = compare(last, loss, Tolerances()).lost
    assert lossy or (last.chars <= 16 and not last.items and not last.item_ids)
    assert severity(new.verdict) >= severity(report.verdict)
    if lossy:
        assert severity(new.verdict) >= severity(new.transitions[-1].verdict) > 0
    # Other journeys of the trace are untouched.
    assert summary([r for r in after if r.key != report.key]) == summary(
        [r for r in before if r.key != report.key]
    )
