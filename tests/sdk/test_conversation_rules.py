"""The rules for derived records: a call's origin is the request whose response issued
it, the request that follows it is looked for in that request's conversation only, and
evidence the telemetry cut is never judged as loss."""

from __future__ import annotations

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, judge_trace
from ctxledger.verdicts.memory_state import MemoryTraceState

TRACE = "c" * 32
T0 = 1_700_000_000_000_000


def request(rid: str, at: int, conversation: str = "a", **kwargs) -> Manifest:
    kwargs.setdefault("step", 1)
    return Manifest(TRACE, rid, conversation=conversation, sequence=T0 + at,
                    source=sc.SOURCE_GENAI, **kwargs)  # fmt: skip


def original(call: str, chars: int = 400, **kwargs) -> Measurement:
    return Measurement(TRACE, call, sc.STAGE_ORIGINAL, 10, chars=chars, items=4,
                       source=sc.SOURCE_GENAI, **kwargs)  # fmt: skip


def carried(call: str, rid: str, chars: int = 400, **kwargs) -> Measurement:
    return Measurement(TRACE, call, sc.STAGE_LLM_INPUT, 40, chars=chars, items=4,
                       request_id=rid, source=sc.SOURCE_GENAI, **kwargs)  # fmt: skip


def verdicts(ms: list[Measurement], mans: list[Manifest]) -> dict[tuple[str, str | None], str]:
    whole = {(r.tool_call_id, r.request_id): r.verdict for r in judge_trace(ms, mans)}
    state = MemoryTraceState()
    for item in [*ms, *mans]:  # one span per batch, in this order
        if isinstance(item, Measurement):
            state.ingest([item])
        else:
            state.ingest(manifests=[item])
    assert {(k[1], k[2]): r.verdict for k, r in state.reports.items()} == whole
    return whole


def test_a_request_rebuilt_without_the_call_drops_its_result():
    first = request("r1", 1, issued_calls=("call_a",))
    rebuilt = request("r2", 2, step=1, tool_call_ids=(), tool_calls=())  # no assistant message
    assert verdicts([original("call_a")], [first, rebuilt]) == {
        ("call_a", "r2"): sc.VERDICT_DROPPED
    }


def test_another_conversation_of_the_trace_never_drops_a_result():
    first = request("a1", 1, issued_calls=("call_a",))
    other = request("b1", 2, conversation="b", tool_call_ids=(), tool_calls=())
    follows = request("a2", 3, step=2, tool_call_ids=("call_a",), tool_calls=("call_a",))
    found = verdicts([original("call_a"), carried("call_a", "a2")], [first, other, follows])
    assert found == {("call_a", "a2"): sc.VERDICT_INTACT}


def test_a_cut_result_is_silent_and_names_the_layer():
    first = request("r1", 1, issued_calls=("call_a",))
    second = request("r2", 2, step=2, tool_call_ids=("call_a",), tool_calls=("call_a",))
    ms = [original("call_a", chars=4000), carried("call_a", "r2", chars=1000)]
    (report,) = judge_trace(ms, [first, second])
    assert report.verdict == sc.VERDICT_SILENT
    assert report.source == sc.SOURCE_GENAI
    assert report.layer is not None and report.layer.startswith("between the tool and the request")


def test_the_telemetry_cut_is_never_loss():
    first = request("r1", 1, issued_calls=("call_a", "call_b"))
    cut_request = request("r2", 2, step=2, telemetry_cut="invalid JSON at 4096 chars")
    ms = [original("call_a"), original("call_b", telemetry_cut="exactly 4096 chars")]
    found = verdicts(ms, [first, cut_request])
    assert found == {
        ("call_a", "r2"): sc.VERDICT_UNAUDITABLE,
        ("call_b", "r2"): sc.VERDICT_UNAUDITABLE,
    }
    cut_tool = [original("call_a", chars=4096, telemetry_cut="exactly 4096 chars"),
                carried("call_a", "r3", chars=9000)]  # fmt: skip
    follows = request("r3", 2, step=2, tool_call_ids=("call_a",), tool_calls=("call_a",))
    (report,) = judge_trace(cut_tool, [request("r1", 1, issued_calls=("call_a",)), follows])
    assert report.verdict == sc.VERDICT_UNAUDITABLE
    assert any("not auditable" in note for note in report.notes)


def test_a_call_issued_by_a_response_and_never_answered_is_orphaned_in_the_next_request():
    first = request("r1", 1, issued_calls=("call_a",))
    second = request("r2", 2, step=2, tool_call_ids=(), tool_calls=("call_a",))
    assert verdicts([], [first, second]) == {("call_a", "r2"): sc.VERDICT_ORPHANED}


def test_a_request_the_telemetry_showed_in_part_proves_the_results_it_shows():
    """A request body cut after the first result (Claude Code logs 60 KB inline): the
    result inside the prefix is judged, the call whose result lies beyond is unauditable,
    never dropped."""
    first = request("r1", 1, issued_calls=("call_a", "call_b"))
    cut = "the request body was cut at 60KB; the messages after the first 3 were not seen"
    partial = request("r2", 2, step=None, tool_call_ids=("call_a",),
                      tool_calls=("call_a", "call_b"), telemetry_cut=cut)  # fmt: skip
    ms = [original("call_a"), carried("call_a", "r2"), original("call_b")]
    found = verdicts(ms, [first, partial])
    assert found == {
        ("call_a", "r2"): sc.VERDICT_INTACT,
        ("call_b", "r2"): sc.VERDICT_UNAUDITABLE,
    }
    lost_in_prefix = [original("call_a"), carried("call_a", "r2", chars=100), original("call_b")]
    assert verdicts(lost_in_prefix, [first, partial])[("call_a", "r2")] == sc.VERDICT_SILENT


def test_a_reduction_the_model_is_told_of_is_declared_though_the_telemetry_cut_before_it():
    """Claude Code's tool.output holds only the first 30,000 chars of a long Bash output;
    the request carries a <persisted-output> preview that tells the model so: declared,
    how much went unknown. Without the marker the cut leaves the journey unauditable."""
    follows = request("r2", 2, step=2, tool_call_ids=("call_a",), tool_calls=("call_a",))
    first = request("r1", 1, issued_calls=("call_a",))
    cut = "the tool.output event holds the first 30,000 chars"
    told = [original("call_a", chars=30_000, telemetry_cut=cut),
            carried("call_a", "r2", chars=2_400, markers_found=("persisted_output",))]  # fmt: skip
    (report,) = judge_trace(told, [first, follows])
    assert report.verdict == sc.VERDICT_DECLARED
    assert any("cut by the telemetry" in note for note in report.notes)
    untold = [original("call_a", chars=30_000, telemetry_cut=cut),
              carried("call_a", "r2", chars=2_400)]  # fmt: skip
    assert verdicts(untold, [first, follows]) == {("call_a", "r2"): sc.VERDICT_UNAUDITABLE}
