"""The canonical form is the standard library's, whichever path computed it: orjson's
fast path is compared with ``json.loads`` + ``json.dumps(sort_keys=True)`` on generated
values, their mutations and the cases where orjson reads or writes numbers differently."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxledger._canonical import _orjson_changes_a_number, canonical_json, read_json


def reference(text: str) -> tuple[Any, bytes] | None:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed, canonical_json(parsed).encode("utf-8", errors="surrogatepass")


def same(text: str) -> None:
    got, expected = read_json(text), reference(text)
    if expected is None:
        assert got is None, text
        return
    assert got is not None, text
    assert got[1] == expected[1], text
    # Equal trees, ints told from floats (1 vs 1.0), NaN equal to itself.
    assert repr(got[0]) == repr(expected[0]), text


numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.sampled_from([1e-5, 1.5e-7, 5e-324, 1e16, 1e21, 1e22, -0.0, 0.0, 2**64, -(2**63) - 1]),
)
texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(texts, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(values, st.booleans(), st.sampled_from([None, 0, 2]), st.booleans())
def test_generated_values_read_and_written_as_the_standard_library_does(
    value: Any, ensure_ascii: bool, indent: int | None, sort_keys: bool
) -> None:
    same(json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys))


@settings(max_examples=300, deadline=None)
@given(values, st.data())
def test_cut_or_altered_texts_are_judged_as_the_standard_library_judges_them(
    value: Any, data: st.DataObject
) -> None:
    text = json.dumps(value, ensure_ascii=False)
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    inserted = data.draw(st.sampled_from(["", ",", "]", "}", '"', "\\", "\x00", " ", "\ufeff"]))
    same(text[:at] + inserted + text[at:])
    same(text[:at])


@pytest.mark.parametrize(
    "text",
    [
        '{"b": 1, "a": 2, "b": 3}',  # duplicate keys: the last value, the first position
        '{"\\uffff": 1, "\\ud83d\\ude00": 2, "\u00e9": 3, "a": 4}',  # code-point key order
        "18446744073709551616",  # one past 64 bits: orjson reads a float
        "-9223372036854775809",
        "[1e-05, 0.00001, 1.5e-7, 1E-9]",  # orjson writes small floats without exponent
        "1E400",
        "[NaN, Infinity, -Infinity]",
        '"\\ud800 lone"',
        '"\ud800 raw lone"',
        "\ufeff[1]",
        "[" * 300 + "]" * 300,  # deeper than orjson writes
        "[" * 2000 + "]" * 2000,  # deeper than either reads
        '"\u2028\u2029\x7f"',
        '{"id": "doc-0000000000000000001", "score": 0.5}',
        " [1, 2.50, -0, -0.0, 1e5] ",
        "",
        "nul",
    ],
)
def test_cases_where_orjson_differs_or_refuses(text: str) -> None:
    same(text)


def test_plain_data_takes_the_fast_path() -> None:
    orjson = pytest.importorskip("orjson")
    records = [{"id": f"doc-{n}", "score": 0.25 * n, "title": "退款规则"} for n in range(40)]
    assert not _orjson_changes_a_number(orjson.loads(json.dumps(records)))
    assert _orjson_changes_a_number(orjson.loads('[{"a": [1e-05]}]'))
    assert _orjson_changes_a_number(orjson.loads("[18446744073709551616]"))


@settings(max_examples=500, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**18),
    st.integers(min_value=0, max_value=10**18),
    st.sampled_from(["", "e0", "e+5", "E15", "e22", "e-3", "e-300", "e308", "e309"]),
    st.booleans(),
)
def test_decimal_numbers_read_as_python_reads_them(
    whole: int, fraction: int, exponent: str, negative: bool
) -> None:
    number = f"{'-' if negative else ''}{whole}.{fraction}{exponent}"
    same(f'[{number}, {{"n": {number}}}]')
