"""The serializations real frameworks send, recognised for items, ids and digests: a tool
result re-serialized by ``str()``, JSON Lines, YAML, CSV or a markdown table is the same
data, and text that looks like data but cannot be read has an unknown item count."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool as langchain_tool

import ctxledger
from ctxledger import semconv as sc
from ctxledger._analysis import TextAnalyzer
from ctxledger._serialize import to_text
from ctxledger.text import measure_text
from ctxledger.verdicts import Measurement, judge_trace

RECORDS = [
    {"id": f"kb-{i:03d}", "score": round(0.5 + i / 100, 2), "text": f"退款规则第{i}条 'x'"}
    for i in range(50)
]


@pytest.fixture
def ledger(tmp_path: Path):
    path = tmp_path / "ledger.txt"
    client = ctxledger.configure(service_name="formats", export=False, ledger=str(path))
    yield path
    client.shutdown()


def _losses(path: Path) -> list[str]:
    ctxledger.flush()
    return [line for line in path.read_text(encoding="utf-8").splitlines() if " LOSS " in line]


def _stage(text: str, stage: str, order: int, request: str | None = None) -> Measurement:
    m = measure_text(text)
    return Measurement(
        trace_id="t" * 32,
        tool_call_id="call_1",
        stage=stage,
        order=order,
        chars=m.chars,
        request_id=request,
        tokens=m.tokens,
        tokenizer=m.tokenizer,
        canonical_chars=m.canonical_chars,
        items=m.items,
        item_ids=m.item_ids,
        fields=m.fields,
        sha256=m.sha256,
        canonical_sha256=m.canonical_sha256,
        json_valid=m.json_valid_attribute,
    )


def _verdict(before: str, after: str) -> str:
    stages = [_stage(before, "serialized", 20), _stage(after, "assembled", 30, "req-1")]
    (report,) = judge_trace(stages)
    return report.verdict


# --- the frameworks' own serialization paths -----------------------------------------------


def test_langchain_tool_returning_data_json_cannot_encode_sends_str_and_is_intact(ledger):
    rows = [{"id": f"ord-{i}", "at": dt.datetime(2024, 5, i + 1, 9, 30), "total": Decimal("9.90")}
            for i in range(30)]  # fmt: skip

    @langchain_tool
    def query_orders(limit: int) -> list[dict[str, object]]:
        """Orders."""
        return rows[:limit]

    message = query_orders.invoke(
        {"type": "tool_call", "name": "query_orders", "id": "call_lc", "args": {"limit": 30}}
    )
    assert isinstance(message, ToolMessage) and message.content == str(rows)  # json.dumps failed
    assembled = measure_text(message.content)
    serialized = measure_text(to_text(rows))
    assert assembled.format == sc.FORMAT_PYTHON
    assert (assembled.items, assembled.item_ids) == (30, serialized.item_ids)
    assert assembled.canonical_sha256 == serialized.canonical_sha256  # str(datetime) alike
    with ctxledger.run("lc-agent"):
        ctxledger.measure("original", rows, tool_call_id="call_lc", tool_name="query_orders")
        ctxledger.measure_messages(
            [{"role": "tool", "tool_call_id": "call_lc", "content": message.content}]
        )
    assert _losses(ledger) == []


def test_langchain_tool_message_built_from_a_dict_and_a_cut_one(ledger):
    value = {"results": RECORDS}
    whole = ToolMessage(content=value, tool_call_id="call_w")  # coerced with str()
    assert whole.content == str(value)
    assert (
        measure_text(whole.content).canonical_sha256
        == measure_text(to_text(value)).canonical_sha256
    )
    with ctxledger.run("lc-agent"):
        for call in ("call_w", "call_cut"):
            ctxledger.measure("serialized", value, tool_call_id=call, tool_name="search")
        ctxledger.measure_messages([
            {"role": "tool", "tool_call_id": "call_w", "content": whole.content},
            {"role": "tool", "tool_call_id": "call_cut", "content": whole.content[:2000]},
        ])  # fmt: skip
    (loss,) = _losses(ledger)
    assert "LOSS silent: search[call_cut]" in loss and "lost ids: kb-035," in loss
    cut = measure_text(whole.content[:2000])
    assert cut.format == sc.FORMAT_PYTHON_CUT and 0 < (cut.items or 0) < 50


def test_openai_responses_guide_output_str_of_the_result(ledger):
    result = {"results": RECORDS}
    with ctxledger.run("responses-agent"):
        ctxledger.measure("serialized", result, tool_call_id="call_r", tool_name="kb")
        ctxledger.measure("serialized", result, tool_call_id="call_s", tool_name="kb")
        ctxledger.measure_messages(
            [
                {"role": "user", "content": "refunds?"},
                {"type": "function_call", "call_id": "call_r", "name": "kb", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_r", "output": str(result)},
                {"type": "function_call", "call_id": "call_s", "name": "kb", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "call_s",
                    "output": str({"results": RECORDS[:20]}),
                },
            ],
            model="gpt-4o",
        )
    (loss,) = _losses(ledger)
    assert "LOSS silent: kb[call_s]" in loss and "lost 30 items" in loss


def _csv(rows: list[dict[str, object]], delimiter: str = ",") -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _markdown(rows: list[dict[str, object]]) -> str:
    """As an LLM tool renders a table for the model."""
    header = "| " + " | ".join(rows[0]) + " |\n|" + " --- |" * len(rows[0])
    return "\n".join(
        [header, *("| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows)]
    )


@pytest.mark.parametrize(
    ("name", "render", "fmt"),
    [
        ("yaml", lambda v: yaml.dump(v, allow_unicode=True), sc.FORMAT_YAML),
        ("yaml_safe", lambda v: yaml.safe_dump({"results": v}), sc.FORMAT_YAML),
        (
            "jsonl",
            lambda v: "\n".join(json.dumps(r, ensure_ascii=False) for r in v),
            sc.FORMAT_JSONL,
        ),
        ("csv", _csv, sc.FORMAT_CSV),
        ("tsv", lambda v: _csv(v, "\t"), sc.FORMAT_TSV),
        ("markdown", _markdown, sc.FORMAT_MARKDOWN_TABLE),
    ],
)
def test_other_serializations_carry_the_same_records(name, render, fmt):
    text = render(RECORDS)
    m = measure_text(text)
    reference = measure_text(json.dumps(RECORDS, ensure_ascii=False))
    assert m.format == fmt, name
    assert (m.items, m.item_ids, m.fields) == (50, reference.item_ids, reference.fields)
    assert m.json_valid_attribute is None  # whole, not JSON: not "broken JSON" either
    assert _verdict(json.dumps(RECORDS), text) == sc.VERDICT_INTACT
    assert _verdict(json.dumps(RECORDS), render(RECORDS[:20])) == sc.VERDICT_SILENT


def test_csv_and_markdown_numbers_read_as_json_numbers():
    flat = [{"id": i, "name": f"张三{i}", "amount": 1.5} for i in range(5)]
    json_digest = measure_text(json.dumps(flat)).canonical_sha256
    assert measure_text(_csv(flat)).canonical_sha256 == json_digest
    assert measure_text(_markdown(flat)).canonical_sha256 == json_digest


def test_a_table_with_a_heading_and_a_footer_is_not_broken():
    text = "Top orders:\n\n" + _markdown(RECORDS[:20]) + "\n\n(30 more rows not shown)"
    m = measure_text(text)
    assert (m.format, m.items, m.json_valid_attribute) == (sc.FORMAT_MARKDOWN_TABLE, 20, None)
    assert "omitted_en" in m.markers_found


def test_plain_text_logs_and_prose_still_count_lines():
    for text in (
        "[INFO] a\n[INFO] b\n[WARN] c",
        "[1] First hit\n[2] Second hit\n[3] Third",
        "ERROR: disk full\nINFO: retry",
        "2024-01-01 10:00:00,123 INFO a\n2024-01-01 10:00:01,9 x",
    ):
        m = measure_text(text)
        assert (m.format, m.items, m.item_ids) == (sc.FORMAT_TEXT, len(text.splitlines()), None), (
            text
        )


# --- unknown, never 0 -------------------------------------------------------------------


def test_data_no_reader_knows_has_an_unknown_count_and_sizes_decide():
    broken = "[{'id': 'kb-000', 'score': 0.5} ; {'id': 'kb-001'}]" * 20
    m = measure_text(broken)
    assert (m.format, m.items, m.item_ids, m.json_valid_attribute) == (
        sc.FORMAT_UNPARSED,
        None,
        None,
        None,
    )
    before = json.dumps([{"id": "kb-000", "score": 0.5}, {"id": "kb-001"}] * 20)
    assert _verdict(before, broken) == sc.VERDICT_INTACT  # no count to compare; sizes equal
    assert _verdict(before, broken[:200]) == sc.VERDICT_SILENT  # the size fell


def test_deep_nesting_and_yaml_alias_bombs_are_bounded():
    assert measure_text("[" * 50_000).chars == 50_000  # JSON's own decoder recursed here
    assert measure_text("[{'a': " * 5_000 + "1" + "}]" * 5_000).items is None
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    m = TextAnalyzer().measure(bomb)
    assert m.format == sc.FORMAT_TEXT and m.items == len(bomb.splitlines())


def test_eval_is_never_used():
    m = measure_text("[os.system('echo pwned'), {'id': 1}]")
    assert m.format == sc.FORMAT_PYTHON and m.items == 2  # the call is kept as its text


# --- properties ----------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(["退款", "订单已发货", "'引号'", 'say "hi"', "a\\b", "\n多行\t"]),
)
_records = st.lists(
    st.fixed_dictionaries(
        {"id": st.integers(0, 10**6).map(lambda i: f"r-{i}")},
        optional={"title": _scalars, "meta": st.dictionaries(st.sampled_from("abc"), _scalars)},
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda r: r["id"],
)
_renderers = {
    sc.FORMAT_PYTHON: str,
    sc.FORMAT_JSONL: lambda rs: "\n".join(json.dumps(r, ensure_ascii=False) for r in rs),
    sc.FORMAT_YAML: lambda rs: yaml.safe_dump({"results": rs}, allow_unicode=True),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_records, fmt=st.sampled_from(sorted(_renderers)))
def test_the_same_records_in_every_format_have_one_count_and_digest(records, fmt):
    if fmt == sc.FORMAT_JSONL and len(records) == 1:
        records = [*records, {"id": "r-extra"}]  # one line of JSON is JSON
    value = {"results": records} if fmt == sc.FORMAT_YAML else records
    text = _renderers[fmt](records)
    if fmt == sc.FORMAT_YAML:  # PyYAML itself folds a few line breaks (NEL) in strings
        assume(yaml.safe_load(text) == value)
    reference = measure_text(json.dumps(value))
    m = measure_text(text)
    assert m.format == fmt
    assert (m.items, m.item_ids, m.fields) == (
        reference.items,
        reference.item_ids,
        reference.fields,
    )
    assert m.canonical_sha256 == reference.canonical_sha256


_data_openers = st.sampled_from(["[{'id': 1}, ", "{'results': [", "[{", "{'a': ", "(", "[['x'"])


@pytest.mark.parametrize(
    "records",
    [
        [{"id": "r-0", "title": "[{"}],  # found by hypothesis: the JSON scan's brackets
        [{"id": "a", "title": "[{"}, {"id": "b"}],
        [{"id": "a", "note": "]"}],
    ],
)
def test_python_records_whose_strings_hold_brackets_are_python_not_a_cut_json(
    records: list[dict[str, str]],
) -> None:
    measured = measure_text(str(records))
    assert measured.format == sc.FORMAT_PYTHON and measured.items == len(records)
    assert measure_text('{"results": [{"id": 1, "na').format == sc.FORMAT_JSON_CUT


@settings(max_examples=200, deadline=None)
@given(opener=_data_openers, garbage=st.text(max_size=40))
def test_text_that_looks_like_data_never_counts_zero_unless_it_was_cut(opener, garbage):
    m = measure_text(opener + garbage)
    if m.format == sc.FORMAT_UNPARSED:
        assert m.items is None and m.item_ids is None
    if m.items == 0:
        assert m.cut or m.format in (sc.FORMAT_PYTHON, sc.FORMAT_TEXT), (opener + garbage, m.format)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_is_measured_without_error(text):
    m = measure_text(text)
    assert m.chars == len(text)
    assert m.items is None or m.items >= 0


def test_on_the_wire_an_unknown_count_and_a_whole_python_literal_leave_attributes_out():
    from ctxledger._stage_attributes import measurement_attributes
    from ctxledger.wire import measurement_from_attributes

    unparsed = measurement_attributes(measure_text("[{'id': 1} ; {'id': 2}]"))
    python = measurement_attributes(measure_text(str(RECORDS)))
    cut = measurement_attributes(measure_text(json.dumps(RECORDS)[:500]))
    assert sc.SIZE_ITEMS not in unparsed and sc.JSON_VALID not in unparsed
    assert unparsed[sc.CONTENT_FORMAT] == sc.FORMAT_UNPARSED
    assert python[sc.SIZE_ITEMS] == 50 and sc.JSON_VALID not in python
    assert (cut[sc.CONTENT_FORMAT], cut[sc.JSON_VALID]) == (sc.FORMAT_JSON_CUT, False)
    attrs = {**unparsed, sc.STAGE: "assembled", sc.TOOL_CALL_ID: "c", sc.REQUEST_ID: "r"}
    assert measurement_from_attributes(attrs, trace_id="t" * 32).items is None


def test_escapes_past_the_last_code_point_and_huge_numbers_do_not_raise():
    assert measure_text("['\\U00110000', {'id': 1}]").format == sc.FORMAT_UNPARSED
    m = measure_text("[{'id': 1, 'n': " + "9" * 5000 + "}]")
    assert (m.format, m.items) == (sc.FORMAT_PYTHON, 1)
