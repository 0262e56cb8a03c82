"""Head + tail clipping: budgets in chars and tokens, whole lines, whole grapheme
clusters, a visible marker, and a declaration the verdict rules call ``declared``."""

from __future__ import annotations

import bisect
import importlib
import inspect
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxledger
from ctxledger._analysis import TextAnalyzer
from ctxledger._markers import MarkerScanner
from ctxledger.remedies.budget import Budget, as_budget
from ctxledger.remedies.clip import Clipped, clip_text, render_clip
from ctxledger.remedies.graphemes import boundary_at_or_before, grapheme_boundaries
from ctxledger.verdicts import Measurement, judge_trace

regex = importlib.import_module("regex")  # ships with tiktoken; no type stubs
GRAPHEME = regex.compile(r"\X")
SCANNER = MarkerScanner()

FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one cluster, seven code points
FLAGS = "🇨🇳🇺🇸🇯🇵"  # three clusters of two regional indicators
COMBINING = "e\u0301\u0323"  # e + acute + dot below: one cluster
HANGUL = "\u1100\u1161\u11a8"  # conjoining jamo: one cluster
CHINESE = "订单查询结果已经返回，请注意退款中的记录。"


def boundaries(text: str) -> set[int]:
    ends = {0}
    for match in GRAPHEME.finditer(text):
        ends.add(match.end())
    return ends


def head_tail(original: str, result: Clipped) -> tuple[int, int]:
    """The head end and tail start, checked against the text actually produced."""
    assert result.omitted_chars is not None
    head_end, tail_start = result.omitted_chars[0] - 1, result.omitted_chars[1]
    assert result.text.startswith(original[:head_end])
    assert result.text.endswith(original[tail_start:])
    if " in total; " in result.marker:  # the full marker (tiny budgets get shorter ones)
        assert result.text == render_clip(original, head_end, tail_start, unit=result.unit)
    else:
        assert len(result.text) <= len(original[:head_end]) + len(result.marker) + 2 + len(
            original[tail_start:]
        )
    return head_end, tail_start


def assert_whole_graphemes(original: str, result: Clipped) -> None:
    head_end, tail_start = head_tail(original, result)
    bounds = boundaries(original)
    assert head_end in bounds, f"head cut inside a grapheme cluster at {head_end}"
    assert tail_start in bounds, f"tail cut inside a grapheme cluster at {tail_start}"
    clusters = GRAPHEME.findall(original)
    head_clusters = GRAPHEME.findall(original[:head_end])
    tail_clusters = GRAPHEME.findall(original[tail_start:])
    assert head_clusters == clusters[: len(head_clusters)]
    assert tail_clusters == clusters[len(clusters) - len(tail_clusters) :]
    # The marker does not merge with what is next to it.
    shown = GRAPHEME.findall(result.text)
    assert shown[: len(head_clusters)] == head_clusters
    assert shown[len(shown) - len(tail_clusters) :] == tail_clusters


def make_log(lines: int = 500) -> str:
    body = "".join(
        f"2026-11-11T10:{i // 60:02d}:{i % 60:02d} INFO worker-{i % 7} processed batch {i}\n"
        for i in range(lines - 1)
    )
    return body + "2026-11-11T11:00:00 ERROR payment gateway timeout (E_PAY_TIMEOUT)\n"


def measurement(text: str, stage: str, order: int, **declared: object) -> Measurement:
    m = TextAnalyzer().measure(text)
    return Measurement(
        trace_id="trace",
        tool_call_id="call-1",
        stage=stage,
        order=order,
        chars=m.chars,
        bytes=m.bytes,
        tokens=m.tokens,
        tokenizer=m.tokenizer,
        canonical_chars=m.canonical_chars,
        items=m.items,
        item_ids=m.item_ids,
        ids_complete=m.ids_complete,
        fields=m.fields,
        fields_complete=m.fields_complete,
        priority_items=m.priority_items,
        sha256=m.sha256,
        canonical_sha256=m.canonical_sha256,
        json_valid=m.json_valid,
        markers_found=m.markers_found,
        declared=bool(declared.get("declared", False)),
        strategy=declared.get("strategy"),  # type: ignore[arg-type]
        marker=bool(declared.get("marker")),
    )


def verdict(original: str, text: str, **declared: object) -> str:
    reports = judge_trace(
        [measurement(original, "original", 10), measurement(text, "serialized", 20, **declared)]
    )
    assert len(reports) == 1
    return reports[0].verdict


# -- nothing to remove -----------------------------------------------------------------
def test_text_within_budget_comes_back_unchanged_and_undeclared() -> None:
    text = make_log(20)
    result = clip_text(text, budget=Budget(chars=len(text)))
    assert result.text is text or result.text == text
    assert result.clipped is False
    assert result.omitted_lines is None and result.omitted_chars is None
    assert result.kept_lines == result.total_lines == 20
    assert result.declaration() == {"declared": False, "strategy": None, "marker": None}
    assert clip_text(text, budget=Budget()).clipped is False  # unlimited


# -- lines -----------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [400, 1000, 2500])
def test_log_keeps_whole_head_and_tail_lines_within_a_char_budget(limit: int) -> None:
    log = make_log()
    result = clip_text(log, budget=Budget(chars=limit))
    assert result.clipped and result.unit == "lines"
    assert len(result.text) <= limit
    head_end, tail_start = head_tail(log, result)
    assert head_end == 0 or log[head_end - 1] == "\n"  # whole lines only
    assert log[tail_start - 1] == "\n"
    assert result.text.rstrip("\n").endswith("ERROR payment gateway timeout (E_PAY_TIMEOUT)")
    # As much as possible: one more head line or one more tail line would not fit.
    next_head = log.index("\n", head_end) + 1
    prev_tail = log.rindex("\n", 0, tail_start - 1) + 1
    assert len(render_clip(log, next_head, tail_start)) > limit
    assert len(render_clip(log, head_end, prev_tail)) > limit
    # The counts the marker states are the real ones.
    first, last = result.omitted_lines or (0, 0)
    assert result.kept_lines == 500 - (last - first + 1)
    assert log[:head_end].count("\n") == first - 1
    assert f"omitted lines {first:,}–{last:,} ({last - first + 1:,} lines" in result.text
    assert f"500 lines, {len(log):,} chars in total" in result.text
    assert result.total_chars == len(log) and result.total_lines == 500


def test_head_share_splits_the_budget_and_the_tail_takes_what_is_left() -> None:
    log = make_log()
    budget = Budget(chars=1500)
    balanced = clip_text(log, budget=budget)
    tail_only = clip_text(log, budget=budget, head_share=0.0)
    head_heavy = clip_text(log, budget=budget, head_share=0.9)
    assert tail_only.text.startswith("…[ctxledger: clipped")  # no head at all
    b_head, _ = head_tail(log, balanced)
    h_head, h_tail = head_tail(log, head_heavy)
    assert h_head > b_head > 0
    assert h_tail < len(log)  # even a greedy head leaves the log its last line
    for result in (balanced, tail_only, head_heavy):
        assert len(result.text) <= 1500
        assert "E_PAY_TIMEOUT" in result.text


def test_token_budget_is_exact_and_filled_for_chinese_lines() -> None:
    text = "".join(f"第{i}行：{CHINESE}{FAMILY}\n" for i in range(300))
    budget = Budget(tokens=300)
    result = clip_text(text, budget=budget)
    assert result.clipped and result.unit == "lines"
    assert budget.tokens_of(result.text) <= 300
    head_end, tail_start = head_tail(text, result)
    next_head = text.index("\n", head_end) + 1
    prev_tail = text.rindex("\n", 0, tail_start - 1) + 1
    assert budget.tokens_of(render_clip(text, next_head, tail_start)) > 300
    assert budget.tokens_of(render_clip(text, head_end, prev_tail)) > 300
    assert_whole_graphemes(text, result)


def test_custom_how_to_get_more_is_in_the_marker() -> None:
    result = clip_text(
        make_log(), budget=Budget(chars=900), how_to_get_more="call read_log(offset=N) for more"
    )
    assert "; call read_log(offset=N) for more]…" in result.text
    assert "narrower range" not in result.text
    default = clip_text(make_log(), budget=Budget(chars=900))
    assert "ask for a narrower range (offset/pattern)]…" in default.text


def test_a_huge_last_line_falls_back_to_graphemes_and_keeps_the_end() -> None:
    text = "header line\n" + (CHINESE + FAMILY + COMBINING) * 300 + "THE-END"
    result = clip_text(text, budget=Budget(chars=600))
    assert result.clipped and result.unit == "chars"
    assert len(result.text) <= 600
    assert result.text.endswith("THE-END")
    assert_whole_graphemes(text, result)


# -- grapheme clusters -------------------------------------------------------------------
TRICKY = [
    CHINESE * 40,
    (FAMILY + "家") * 120,
    FLAGS * 150,
    (COMBINING + "a" + HANGUL) * 200,
    ("Zu\u0308rich " + FAMILY + " 北京 " + FLAGS + " ok\r\n") * 60,
]


@pytest.mark.parametrize("text", TRICKY, ids=["chinese", "zwj", "flags", "combining", "mixed"])
@pytest.mark.parametrize("by", ["chars", "lines"])
@pytest.mark.parametrize(
    "budget", [Budget(chars=190), Budget(chars=333), Budget(tokens=80), Budget(tokens=150)]
)
def test_never_cuts_inside_a_grapheme_cluster(text: str, by: str, budget: Budget) -> None:
    result = clip_text(text, budget=budget, by=by)  # type: ignore[arg-type]
    assert result.clipped
    assert budget.fits(result.text)
    assert_whole_graphemes(text, result)
    assert SCANNER.find(result.text)[0] == "ctxledger"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.sampled_from(
            [FAMILY, FLAGS[:2], COMBINING, HANGUL, "家", "a", " ", "\n", "\r\n", "\u0301"]
        ),
        min_size=1,
        max_size=400,
    ),
    limit=st.integers(min_value=0, max_value=400),
    tokens=st.booleans(),
    by=st.sampled_from(["chars", "lines"]),
    head_share=st.sampled_from([0.0, 0.3, 0.6, 1.0]),
)
def test_any_text_any_budget_fits_and_keeps_whole_clusters(
    parts: list[str], limit: int, tokens: bool, by: str, head_share: float
) -> None:
    text = "".join(parts)
    budget = Budget(tokens=limit) if tokens else Budget(chars=limit)
    result = clip_text(text, budget=budget, by=by, head_share=head_share)  # type: ignore[arg-type]
    assert budget.fits(result.text)
    if not result.clipped:
        assert result.text == text
        return
    assert_whole_graphemes(text, result)
    if result.marker:
        assert "[ctxledger: clipped" in result.text


def test_clusters_straddling_the_window_are_kept_whole_in_a_long_single_line() -> None:
    text = "x" * 5000 + (FAMILY * 3000) + "y" * 5000
    for limit in (150, 1200, 4000):
        result = clip_text(text, budget=Budget(chars=limit), by="chars")
        assert len(result.text) <= limit
        assert_whole_graphemes(text, result)
    middle = FAMILY * 4000
    result = clip_text(middle, budget=Budget(tokens=120), by="chars")
    assert Budget(tokens=120).fits(result.text)
    assert_whole_graphemes(middle, result)


def test_boundary_helpers_agree_with_full_segmentation() -> None:
    text = ("a" + FAMILY + FLAGS + COMBINING + "\r\n" + HANGUL + "家 ok" + COMBINING) * 30
    text += (FLAGS + "ab" + COMBINING + "c" + FAMILY) * 700  # no line feed for 10,000 chars
    bounds = sorted(boundaries(text))
    assert grapheme_boundaries(text) == bounds
    assert grapheme_boundaries(text, bounds[10], bounds[20] - 1) == bounds[10:21]
    for offset in [*range(400), *range(400, len(text) + 1, 37), len(text)]:
        expected = bounds[bisect.bisect_right(bounds, offset) - 1]
        assert boundary_at_or_before(text, offset) == expected, offset


# -- markers, odd inputs, tiny budgets ------------------------------------------------------
def test_the_marker_is_found_by_the_sdk_and_states_the_totals() -> None:
    log = make_log()
    result = clip_text(log, budget=Budget(chars=700))
    assert "ctxledger" in SCANNER.find(result.text)
    assert "ctxledger" in TextAnalyzer().measure(result.text).markers_found
    assert result.marker in result.text
    assert re.search(r"…\[ctxledger: clipped — 500 lines, [\d,]+ chars in total; ", result.text)


@pytest.mark.parametrize(
    "value",
    [None, b"bytes \xff\xfe " * 200, {"k": ["v" * 50] * 40}, 12345, 3.5, object(), "\ud800" * 300],
)
def test_odd_inputs_never_raise(value: object) -> None:
    result = clip_text(value, budget=Budget(chars=120))
    assert isinstance(result.text, str)
    assert len(result.text) <= 120


def test_odd_arguments_never_raise() -> None:
    text = make_log(50)
    result = clip_text(text, budget=300, head_share="many", by="words")  # type: ignore[arg-type]
    assert len(result.text) <= 300 and result.clipped
    assert as_budget(300) == Budget(chars=300)


def test_a_budget_too_small_for_any_marker_keeps_a_declared_but_unmarked_sliver() -> None:
    text = CHINESE * 10
    result = clip_text(text, budget=Budget(chars=8), by="chars")
    assert len(result.text) <= 8
    assert result.marker == ""
    assert result.declaration() == {"declared": True, "strategy": "head_tail", "marker": False}
    short = clip_text(text, budget=Budget(chars=60), by="chars")
    assert len(short.text) <= 60
    assert "[ctxledger: clipped" in short.text  # a shorter marker still fits


# -- declaration and verdict ---------------------------------------------------------------
def test_declaration_is_accepted_by_measure_and_judged_declared() -> None:
    log = make_log()
    result = clip_text(log, budget=Budget(chars=1200))
    declared = result.declaration()
    assert declared == {"declared": True, "strategy": "head_tail", "marker": True}
    inspect.signature(ctxledger.measure).bind(
        "serialized", result.text, tool_call_id="call-1", **declared
    )
    assert verdict(log, result.text, **declared) == "declared"


def test_the_verdict_sees_the_difference_a_marker_makes() -> None:
    log = make_log()
    assert verdict(log, log[:1200]) == "silent"  # the seeds' silent cut
    assert verdict(log, log[:1200], declared=True, strategy="head_chars") == "unmarked"
    clipped = clip_text(log, budget=Budget(chars=1200))
    # Even without the declaration the marker alone tells the model.
    assert verdict(log, clipped.text) == "declared"
