"""Row clip, structured preservation (seed 000) and the pagination envelope (seed 002):
budgets met exactly and filled, valid JSON always, markers the SDK finds, and
declarations the verdict rules call ``declared``."""

from __future__ import annotations

import inspect
import json
import random
import re
from typing import Any

import pytest

import ctxledger
from ctxledger._analysis import TextAnalyzer
from ctxledger._markers import MarkerScanner
from ctxledger.remedies.budget import Budget
from ctxledger.remedies.paging import paginate
from ctxledger.remedies.rows import (
    DEFAULT_RULES,
    KeepRule,
    clip_rows,
    keep_structured,
    rows_note,
    structured_note,
)
from ctxledger.verdicts import Measurement, judge_trace

SCANNER = MarkerScanner()
BUDGETS = [Budget(chars=2000), Budget(chars=5000), Budget(tokens=700), Budget(tokens=1500)]
BUDGET_IDS = ["2000chars", "5000chars", "700tokens", "1500tokens"]

# Seed 000's design: 200 orders, 10 key facts over head, tail, anomaly and ordinary rows.
ANOMALIES = {
    42: ("paid", "E_PAY_TIMEOUT"),
    63: ("error", "E_STOCK_SYNC"),
    88: ("refunding", None),
    120: ("failed", "E_RISK_BLOCK"),
    151: ("refunding", None),
    175: ("paid", "E_ADDR_INVALID"),
}
HIGH_AMOUNT, SUSPICIOUS = 99, 133
MUST_KEEP = {*ANOMALIES, HIGH_AMOUNT, SUSPICIOUS}
KEY_FACTS = {
    1: "KEY-01",  # head
    42: "KEY-02",  # anomaly
    70: "KEY-03",  # ordinary middle row
    88: "KEY-04",  # anomaly
    101: "KEY-05",
    120: "KEY-06",  # anomaly
    140: "KEY-07",
    151: "KEY-09",  # anomaly
    160: "KEY-08",
    198: "KEY-10",  # tail
}


def orders(n: int = 200, seed: int = 20261111) -> dict[str, Any]:
    rng = random.Random(seed)
    words = ["请尽快发货", "周末配送", "包装完好", "老客户复购", "发票抬头已提供", "需要礼品包装"]
    rows = []
    for i in range(n):
        status, code = ANOMALIES.get(i, (rng.choice(["paid", "shipped", "delivered"]), None))
        note = "，".join(rng.sample(words, rng.randint(1, 3)))
        if i in KEY_FACTS:
            note += f"（{KEY_FACTS[i]}）"
        if i == SUSPICIOUS:
            note = "疑似欺诈，人工审核"
        rows.append(
            {
                "id": f"ORD-{20260000 + i}",
                "status": status,
                "amount": 18800.0 if i == HIGH_AMOUNT else round(rng.uniform(20, 3000), 2),
                "buyer": rng.choice("王李张刘陈杨赵黄周吴") + rng.choice("伟芳娜敏静丽强磊军洋"),
                "sku": f"SKU-{rng.randint(1000, 9999)}",
                "qty": rng.randint(1, 5),
                "error_code": code,
                "note": note,
            }
        )
    return {"tool": "order.query", "query": {"shop": "A01", "days": 30}, "total": n, "items": rows}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def measurement(text: str, stage: str, order: int, **declared: Any) -> Measurement:
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
        strategy=declared.get("strategy"),
        marker=bool(declared.get("marker")),
    )


def verdict(original: str, text: str, **declared: Any) -> str:
    reports = judge_trace(
        [measurement(original, "original", 10), measurement(text, "serialized", 20, **declared)]
    )
    assert len(reports) == 1
    return reports[0].verdict


# -- clip_rows ----------------------------------------------------------------------------
def expected_head_rows(doc: dict[str, Any], kept: int) -> str:
    """What clip_rows must give for ``kept`` rows, built from the contract alone."""
    out = dict(doc)
    total = len(doc["items"])
    out["items"] = doc["items"][:kept]
    out.update(truncated=True, kept=kept, total=total, note=rows_note(kept, total))
    return dumps(out)


@pytest.mark.parametrize("budget", BUDGETS, ids=BUDGET_IDS)
def test_clip_rows_fills_the_budget_exactly_with_whole_rows(budget: Budget) -> None:
    doc = orders()
    result = clip_rows(dumps(doc), budget=budget)
    assert result.truncated and result.total == 200 and 0 < result.kept < 200
    assert budget.fits(result.text)
    assert result.text == expected_head_rows(doc, result.kept)
    assert not budget.fits(expected_head_rows(doc, result.kept + 1))  # the next row overshoots
    parsed = json.loads(result.text)
    assert parsed["items"] == doc["items"][: result.kept]
    assert (parsed["truncated"], parsed["kept"], parsed["total"]) == (True, result.kept, 200)
    assert parsed["tool"] == "order.query" and parsed["query"] == doc["query"]
    assert result.kept_indices == tuple(range(result.kept))
    assert result.path == ("items",)


def test_a_fixed_row_count_overshoots_where_clip_rows_does_not() -> None:
    doc = orders()
    first_20 = dumps({**doc, "items": doc["items"][:20], "truncated": True})
    assert len(first_20) > 2000  # seed 000's "first 20 rows" overshoot
    result = clip_rows(doc, budget=Budget(chars=2000))
    assert len(result.text) <= 2000


def test_a_bare_array_becomes_an_items_envelope_with_a_note() -> None:
    rows = orders()["items"]
    result = clip_rows(rows, budget=Budget(chars=1500))
    parsed = json.loads(result.text)
    assert list(parsed) == ["items", "truncated", "kept", "total", "note"]
    assert parsed["note"].startswith(f"[ctxledger: kept {result.kept} of 200 rows")
    assert result.path == ()
    assert "ctxledger" in SCANNER.find(result.text)
    assert "json_truncated_flag" in SCANNER.find(result.text)


def test_rows_stay_under_their_key_nested_or_named() -> None:
    rows = orders()["items"]
    nested = {"took": 3, "hits": {"total": {"value": 200}, "hits": rows}}
    result = clip_rows(nested, budget=Budget(chars=1500))
    parsed = json.loads(result.text)
    assert result.path == ("hits", "hits")
    assert parsed["hits"]["hits"] == rows[: result.kept]
    assert parsed["hits"]["total"] == {"value": 200} and parsed["took"] == 3
    named = clip_rows({"orders": rows, "page": 1}, budget=Budget(chars=1500), key="orders")
    assert json.loads(named.text)["orders"] == rows[: named.kept]
    assert named.path == ("orders",)


def test_a_tool_total_that_differs_is_kept_as_original_total() -> None:
    rows = orders()["items"][:50]
    result = clip_rows({"total": 5000, "results": rows}, budget=Budget(chars=1200))
    parsed = json.loads(result.text)
    assert parsed["total"] == 50 and parsed["original_total"] == 5000


def test_clip_rows_leaves_a_fitting_result_alone_and_declares_nothing() -> None:
    text = dumps(orders(5))
    result = clip_rows(text, budget=Budget(chars=len(text)))
    assert result.text == text and not result.truncated
    assert result.declaration() == {"declared": False, "strategy": None, "marker": None}
    pretty = json.dumps(orders(5), ensure_ascii=False, indent=2)
    compacted = clip_rows(pretty, budget=Budget(chars=len(text)))
    assert compacted.text == text and not compacted.truncated  # whitespace only


def test_text_that_is_not_json_is_clipped_by_lines() -> None:
    log = "".join(f"line {i}\n" for i in range(400))
    result = clip_rows(log, budget=Budget(chars=300))
    assert len(result.text) <= 300
    assert "[ctxledger: clipped" in result.text
    assert result.declaration()["strategy"] == "head_tail"


@pytest.mark.parametrize("value", [None, 42, "", "[", b"\xff\xfe", {"no": "list"}, object()])
def test_rows_functions_never_raise(value: Any) -> None:
    for result in (
        clip_rows(value, budget=Budget(chars=50)),
        keep_structured(value, budget=Budget(chars=50)),
    ):
        assert isinstance(result.text, str) and len(result.text) <= 50


def test_a_budget_too_small_for_the_envelope_is_flagged_but_still_json() -> None:
    result = clip_rows(orders(), budget=Budget(chars=30))
    assert not result.fits
    assert json.loads(result.text)["truncated"] is True
    smallest = clip_rows(orders(), budget=Budget(chars=60))
    assert smallest.fits and len(smallest.text) <= 60
    assert json.loads(smallest.text)["kept"] == 0


# -- keep_structured ----------------------------------------------------------------------
def first_reason(row: dict[str, Any], index: int, total: int) -> str | None:
    for rule in DEFAULT_RULES:
        if rule.matches(row):
            return rule.name
    if index < 5:
        return "head"
    if index >= total - 3:
        return "tail"
    return None


def expected_structured(doc: dict[str, Any], reasons: dict[int, str]) -> str:
    """What keep_structured must give for these kept rows, from the contract alone."""
    rows = doc["items"]
    order = sorted(reasons)
    must_keep = sum(1 for i, row in enumerate(rows) if any(r.matches(row) for r in DEFAULT_RULES))
    out = dict(doc)
    out["items"] = [rows[i] for i in order]
    out.update(
        truncated=True,
        kept=len(order),
        total=len(rows),
        note=structured_note(len(rows), [reasons[i] for i in order], must_keep),
        kept_by={rows[i]["id"]: reasons[i] for i in order},
    )
    return dumps(out)


@pytest.mark.parametrize("budget", BUDGETS, ids=BUDGET_IDS)
def test_structured_keeps_every_must_keep_row_that_fits(budget: Budget) -> None:
    doc = orders()
    rows = doc["items"]
    result = keep_structured(dumps(doc), budget=budget)
    assert result.truncated and budget.fits(result.text)
    parsed = json.loads(result.text)
    kept_rows = parsed["items"]
    indices = [rows.index(row) for row in kept_rows]
    assert indices == sorted(indices)  # original order
    assert tuple(indices) == result.kept_indices
    reasons = {i: parsed["kept_by"][rows[i]["id"]] for i in indices}
    for i, reason in reasons.items():
        assert reason == first_reason(rows[i], i, 200)
    assert result.text == expected_structured(doc, reasons)
    # Every candidate left out would overshoot when added to what was kept.
    for i, row in enumerate(rows):
        reason = first_reason(row, i, 200)
        if reason is not None and i not in reasons:
            assert not budget.fits(expected_structured(doc, {**reasons, i: reason})), row["id"]
    assert result.must_keep == len(MUST_KEEP)
    omitted = {rows[i]["id"] for i in MUST_KEEP - set(reasons)}
    assert set(result.must_keep_omitted) == omitted
    assert result.must_keep_kept == len(MUST_KEEP) - len(omitted)
    assert dict(result.kept_by) == parsed["kept_by"]
    assert f"must-keep {result.must_keep_kept} of {len(MUST_KEEP)}" in parsed["note"]


def test_seed_000_budget_keeps_all_anomalies_and_reports_the_rule() -> None:
    doc = orders()
    result = keep_structured(doc, budget=Budget(chars=2000))
    assert len(result.text) <= 2000
    parsed = json.loads(result.text)
    by_id = parsed["kept_by"]
    for index in MUST_KEEP:
        assert by_id[doc["items"][index]["id"]] in {r.name for r in DEFAULT_RULES}
    assert by_id["ORD-20260088"] == "status" and by_id["ORD-20260042"] == "error_code"
    assert by_id["ORD-20260099"] == "amount>=10000"
    assert by_id["ORD-20260133"] == "suspicious_note"
    head_rows = clip_rows(doc, budget=Budget(chars=2000))
    facts = set(re.findall(r"KEY-\d\d", result.text))
    assert facts >= {"KEY-02", "KEY-04", "KEY-06", "KEY-09"}
    assert len(facts) > len(set(re.findall(r"KEY-\d\d", head_rows.text)))


def test_a_roomier_budget_adds_head_and_tail_samples() -> None:
    doc = orders()
    result = keep_structured(doc, budget=Budget(chars=3500))
    values = set(result.kept_by.values())
    assert {"head", "tail"} <= values
    assert result.must_keep_kept == len(MUST_KEEP)
    assert "KEY-01" in result.text and "KEY-10" in result.text


def test_rules_are_overridable_per_call() -> None:
    doc = orders()
    vip = (KeepRule("big_qty", "qty", min=5), KeepRule("sku_1xxx", "sku", regex=r"^SKU-1\d{3}$"))
    result = keep_structured(doc, budget=Budget(chars=2500), rules=vip, head=0, tail=0)
    reasons = set(result.kept_by.values())
    assert reasons <= {"big_qty", "sku_1xxx"} and reasons
    for index in result.kept_indices:
        row = doc["items"][index]
        assert row["qty"] >= 5 or row["sku"].startswith("SKU-1")
    none = keep_structured(doc, budget=Budget(chars=2500), rules=(), head=2, tail=1)
    assert set(none.kept_by.values()) == {"head", "tail"} and none.must_keep == 0


def test_keep_rule_conditions() -> None:
    row = {"id": 1, "status": "FAILED", "amount": "12,500.00", "error": {"code": "E1"}, "n": ""}
    assert KeepRule("s", "status", equals=("refunding", "failed")).matches(row)
    assert not KeepRule("s", "status", equals="paid").matches(row)
    assert KeepRule("a", "amount", min=10_000).matches(row)
    assert not KeepRule("a", "amount", min=10_000, max=12_000).matches(row)
    assert KeepRule("code", "error.code", equals="E1").matches(row)
    assert KeepRule("any", "*", regex=r"^E\d").matches({"x": "E7"})
    assert not KeepRule("any", "*", regex=r"^E\d").matches({"x": "OK"})
    assert not KeepRule("empty", "n", non_empty=True).matches(row)
    assert not KeepRule("missing", "nope").matches(row)
    assert not KeepRule("broken", "status", regex="(").matches(row)  # never raises
    assert not KeepRule("bool", "amount", min=0).matches({"amount": True})
    assert not KeepRule("s", "status", equals="x").matches("not a row")


def test_structured_declares_and_is_judged_declared() -> None:
    original = dumps(orders())
    result = keep_structured(original, budget=Budget(chars=2000))
    declared = result.declaration()
    assert declared == {"declared": True, "strategy": "structured", "marker": True}
    inspect.signature(ctxledger.measure).bind(
        "serialized", result.text, tool_call_id="call-1", **declared
    )
    assert verdict(original, result.text, **declared) == "declared"
    assert "ctxledger" in TextAnalyzer().measure(result.text).markers_found
    rows = clip_rows(original, budget=Budget(chars=2000))
    assert rows.declaration() == {"declared": True, "strategy": "head_rows", "marker": True}
    assert verdict(original, rows.text, **rows.declaration()) == "declared"
    assert verdict(original, original[:2000]) == "silent"  # the raw cut this replaces


# -- paginate -------------------------------------------------------------------------------
def records(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "msg": "日志" * (i % 9) + _emoji(i)} for i in range(n)]


def _emoji(i: int) -> str:
    return "👨\u200d👩\u200d👧" if i % 5 == 0 else ""


def test_page_envelope_tells_the_model_when_to_read_on() -> None:
    items = records(3700)
    first = paginate(items)
    parsed = json.loads(first.text)
    assert (parsed["page"], parsed["page_count"], parsed["page_size"]) == (1, 37, 100)
    assert parsed["total"] == 3700 and parsed["next_cursor"] == 2
    assert parsed["items"] == items[:100]
    assert (
        "page 1 of 37 (100 items per page, 3,700 in total): to conclude that something is "
        "absent you must read all pages or narrow the query" in parsed["note"]
    )
    assert "page=2" in parsed["note"]
    assert "ctxledger" in SCANNER.find(first.text)
    last = paginate(items, page=37)
    assert json.loads(last.text)["next_cursor"] is None
    assert json.loads(last.text)["items"] == items[3600:]
    beyond = json.loads(paginate(items, page=99).text)
    assert beyond["items"] == [] and "does not exist" in beyond["note"]
    cursor = json.loads(paginate(items, page="3", cursor_param="cursor").text)  # type: ignore[arg-type]
    assert cursor["page"] == 3 and "cursor=4" in cursor["note"]


@pytest.mark.parametrize("budget", [Budget(chars=3000), Budget(tokens=800)], ids=["chars", "tok"])
def test_page_size_is_fitted_so_every_page_fits(budget: Budget) -> None:
    items = records(400)
    first = paginate(items, budget=budget)
    assert first.fits
    size = first.page_size
    for page in range(1, first.page_count + 1):
        assert budget.fits(paginate(items, page=page, page_size=size).text)
    bigger = paginate(items, page_size=size + 1)
    assert not all(
        budget.fits(paginate(items, page=p, page_size=size + 1).text)
        for p in range(1, bigger.page_count + 1)
    )


def test_page_declarations_and_verdicts() -> None:
    items = records(250)
    original = dumps(items)
    page = paginate(original, page=1, page_size=100)
    assert page.declaration() == {"declared": True, "strategy": "page", "marker": True}
    assert verdict(original, page.text, **page.declaration()) == "declared"
    only = paginate(records(20), page_size=100)
    assert only.page_count == 1 and only.next_cursor is None
    assert only.declaration() == {"declared": False, "strategy": None, "marker": None}
    assert verdict(dumps(records(20)), only.text, **only.declaration()) == "intact"


def test_plain_text_pages_by_lines_and_odd_pages_never_raise() -> None:
    log = "".join(f"line {i}\n" for i in range(25))
    page = json.loads(paginate(log, page=3, page_size=10).text)
    assert page["items"] == [f"line {i}" for i in range(20, 25)] and page["page_count"] == 3
    for odd in (None, 0, -4, "x", 10**30):
        assert json.loads(paginate(log, page=odd, page_size=10).text)["page"] >= 1  # type: ignore[arg-type]
    assert json.loads(paginate(None).text)["items"] == []
    assert json.loads(paginate([]).text)["total"] == 0
