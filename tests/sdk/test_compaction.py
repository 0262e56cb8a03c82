"""A compaction the runtime declares: each result the request before it carried and the
first request after it no longer carries is ``declared`` there (``unmarked`` where only
the span's flag says so), never dropped; later requests after the same compaction add
nothing, and requests the telemetry did not show are not taken for the one before."""

from __future__ import annotations

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace
from ctxledger.verdicts.compaction import compaction_stages, removed_by
from ctxledger.verdicts.vocabulary import layer_name

TRACE = "c" * 32
SUMMARY = "claude_code.summary:5f2c"
NEXT_SUMMARY = "claude_code.summary:9e01"


def request(
    request_id: str, position: int, results: tuple[str, ...], compaction: str | None = None,
    **fields: object,
) -> Manifest:  # fmt: skip
    return Manifest(
        TRACE, request_id, tool_call_ids=results, tool_calls=results, conversation="session",
        sequence=position, source=sc.SOURCE_CLAUDE_CODE, compaction=compaction,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def original(call_id: str, chars: int) -> Measurement:
    return Measurement(TRACE, call_id, sc.STAGE_ORIGINAL, 10, chars=chars, tool_name="Bash")


def carried(call_id: str, request_id: str, chars: int) -> Measurement:
    return Measurement(
        TRACE, call_id, sc.STAGE_LLM_INPUT, sc.STAGE_LLM_INPUT_ORDER, chars=chars,
        request_id=request_id,
    )  # fmt: skip


def by_journey(reports: list[Report]) -> dict[tuple[str, str | None], Report]:
    return {(r.tool_call_id, r.request_id): r for r in reports}


def test_the_first_request_after_a_compaction_declares_each_result_it_replaced() -> None:
    before = request("r1", 1, ("toolu_a", "toolu_b"))
    after = request("r2", 2, ("toolu_b", "toolu_c"), SUMMARY)
    assert removed_by(before, after) == ["toolu_a"]
    reports = by_journey(judge_trace(
        [original("toolu_a", 13_892), carried("toolu_a", "r1", 13_892),
         original("toolu_b", 900), carried("toolu_b", "r1", 900), carried("toolu_b", "r2", 900)],
        [before, after],
    ))  # fmt: skip
    removed = reports[("toolu_a", "r2")]
    assert removed.verdict == sc.VERDICT_DECLARED
    assert removed.lost_chars == 13_892 and layer_name(removed.layer) == "request"
    assert [s.stage for s in removed.stages] == [sc.STAGE_ORIGINAL, sc.STAGE_COMPACTED]
    compacted = removed.stages[-1]
    assert compacted.declared and compacted.strategy == sc.STRATEGY_COMPACTION
    assert compacted.markers_found == ("claude_code.summary",)
    assert any("first after a compaction (Claude Code's summary" in n for n in removed.notes)
    assert reports[("toolu_a", "r1")].verdict == sc.VERDICT_INTACT  # where it was carried
    assert reports[("toolu_b", "r2")].verdict == sc.VERDICT_INTACT  # kept after it


def test_a_compaction_only_the_spans_flag_declares_is_unmarked() -> None:
    reports = by_journey(judge_trace(
        [original("toolu_a", 400), carried("toolu_a", "r1", 400)],
        [request("r1", 1, ("toolu_a",)),
         request("r2", 2, (), sc.GEN_AI_CONVERSATION_COMPACTED)],
    ))  # fmt: skip
    assert reports[("toolu_a", "r2")].verdict == sc.VERDICT_UNMARKED


def test_later_requests_after_the_same_compaction_add_nothing_and_the_next_one_does() -> None:
    manifests = [
        request("r1", 1, ("toolu_a",)),
        request("r2", 2, ("toolu_b",), SUMMARY),
        request("r3", 3, ("toolu_c",), SUMMARY),  # toolu_b gone: not this compaction's doing
        request("r4", 4, (), NEXT_SUMMARY),
    ]
    removed = {(s.tool_call_id, s.request_id) for s in compaction_stages(manifests)}
    assert removed == {("toolu_a", "r2"), ("toolu_c", "r4")}


def test_an_unseen_request_between_is_not_taken_for_the_one_before() -> None:
    """Claude Code's ``llm_request`` spans are requests without messages: the request
    before the compaction is the last one the telemetry showed."""
    unseen = Manifest(
        TRACE, "llm_request:1", conversation="session", sequence=2,
        telemetry_cut="set OTEL_LOG_RAW_API_BODIES=1",
    )  # fmt: skip
    manifests = [request("r1", 1, ("toolu_a",)), unseen, request("r2", 3, (), SUMMARY)]
    assert [(s.tool_call_id, s.request_id) for s in compaction_stages(manifests)] == [
        ("toolu_a", "r2")
    ]


def test_a_request_shown_only_in_part_names_no_removal() -> None:
    cut = request("r2", 2, (), SUMMARY, telemetry_cut="the request body was cut")
    assert removed_by(request("r1", 1, ("toolu_a",)), cut) == []


def test_a_result_whose_call_the_request_still_carries_is_not_removed_by_it() -> None:
    after = Manifest(
        TRACE, "r2", tool_call_ids=(), tool_calls=("toolu_a",), conversation="session",
        sequence=2, compaction=SUMMARY,
    )  # fmt: skip
    assert removed_by(request("r1", 1, ("toolu_a",)), after) == []
