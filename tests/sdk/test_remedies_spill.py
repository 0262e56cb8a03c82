"""Spill and fetch (seed 003): store the whole result, show a preview with a marker and
every record id, read slices back; refs expire; the loss is judged ``declared``."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import time
from pathlib import Path

import pytest
import regex

import ctxledger
from ctxledger._markers import MarkerScanner
from ctxledger.remedies import spill as spill_mod
from ctxledger.remedies import spill_store
from ctxledger.remedies.spill import (
    DirectorySpillStore,
    InvalidRefError,
    Spilled,
    SpillStore,
    fetch,
    fetch_tool_schema,
    grapheme_bounds,
    spill,
)

_NEXT = re.compile(r"offset=(\d+), length=\d+\)\]$")
_REMAIN = re.compile(r"; ([\d,]+) chars remain;")


class MemoryStore:
    """A custom store: anything with put/get/delete/sweep is a SpillStore."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.puts = 0

    def put(self, text: str) -> str:
        self.puts += 1
        ref = f"mem-{self.puts}"
        self.data[ref] = text
        return ref

    def get(self, ref: str) -> str | None:
        return self.data.get(ref)

    def delete(self, ref: str) -> None:
        self.data.pop(ref, None)

    def sweep(self, now: float | None = None) -> int:
        return 0


@pytest.fixture
def store(tmp_path: Path) -> DirectorySpillStore:
    return DirectorySpillStore(tmp_path / "spill")


def _boundaries(text: str) -> set[int]:
    return {0} | {m.end() for m in regex.finditer(r"\X", text)}


def _read_all(ref: str, store: SpillStore, offset: int, length: int) -> tuple[str, list[str]]:
    """Follow the fetch pages from ``offset`` to the end; the text and every page."""
    parts: list[str] = []
    pages: list[str] = []
    for _ in range(10_000):
        page = fetch(ref, offset, length, store=store)
        pages.append(page)
        body, trailer = page.rsplit("\n", 1)
        assert trailer.startswith("[ctxledger: page"), trailer
        parts.append(body)
        following = _NEXT.search(trailer)
        if following is None:
            assert "nothing remains" in trailer
            return "".join(parts), pages
        offset = int(following.group(1))
    raise AssertionError("fetch never reached the end")


def _mixed_text(n: int) -> str:
    pieces = ["中文", "👨‍👩‍👧‍👦", "🇨🇳", "e\u0301", "\r\n", "ab", "👍🏽", "한국어", "x"]
    rng = random.Random(7)
    return "".join(rng.choice(pieces) for _ in range(n))


def _records(n: int, ids: list[str]) -> list[dict[str, object]]:
    return [
        {"id": ids[i], "status": "paid", "amount": i * 3, "note": "备注" * 20} for i in range(n)
    ]


def test_text_within_budget_is_unchanged_and_not_declared():
    mem = MemoryStore()
    result = spill("短结果 ok", budget_chars=100, store=mem)
    assert result == Spilled(
        text="短结果 ok", ref=None, total_chars=6, shown_chars=6, spilled=False
    )
    assert result.declaration() == {"declared": False}
    assert mem.puts == 0
    assert spill({"a": 1}, budget_chars=100, store=mem).text == '{"a": 1}'


def test_directory_store_round_trip_is_exact_and_content_addressed(store):
    text = "line one\r\nline two\n中文 👨‍👩‍👧 lone surrogate \ud800 end"
    ref = store.put(text)
    assert re.fullmatch(r"spill_[0-9a-f]{16}", ref)
    assert store.get(ref) == text
    assert store.put(text) == ref
    assert store.put(text + "!") != ref
    files = sorted(p.name for p in store.directory.iterdir())
    assert files == sorted([ref + ".txt", store.put(text + "!") + ".txt"])  # no temp files
    store.delete(ref)
    assert store.get(ref) is None
    store.delete(ref)  # already gone: no error


def test_failed_write_leaves_neither_the_ref_nor_a_temp_file(store, monkeypatch):
    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(spill_store.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        store.put("some text")
    assert list(store.directory.iterdir()) == []


def test_over_budget_shows_a_preview_and_a_detected_marker(store):
    text = "".join(f"row {i:05d}: value {i * 7}\n" for i in range(1700))  # ~38,000 chars
    result = spill(text, budget_chars=1500, store=store)
    assert result.spilled and result.ref is not None
    assert len(result.text) <= 1500
    assert result.total_chars == len(text) and result.shown_chars > 1000
    assert result.text.startswith(text[: result.shown_chars] + "\n…[ctxledger: spilled")
    assert f"{len(text):,} chars in total, {result.shown_chars:,} shown" in result.text
    assert f'fetch_result(ref="{result.ref}", offset={result.shown_chars}, length=4000)' in (
        result.text
    )
    assert "ctxledger" in MarkerScanner().find(result.text)
    assert store.get(result.ref) == text
    assert result.declaration() == {
        "declared": True,
        "strategy": "spill",
        "marker": True,
        "ref": result.ref,
    }


def test_how_to_fetch_names_the_tool_in_the_marker(store):
    result = spill("z" * 5000, budget_chars=1000, store=store, how_to_fetch="read_result")
    assert f'read_result(ref="{result.ref}", offset=' in result.text
    assert "fetch_result" not in result.text


def test_preview_continues_where_fetch_begins_and_slices_cover_the_text(store):
    text = _mixed_text(6000)
    result = spill(text, budget_chars=2000, preview_chars=900, store=store)
    assert result.shown_chars <= 900
    read, pages = _read_all(result.ref, store, result.shown_chars, 777)
    assert text[: result.shown_chars] + read == text
    assert len(pages) > 3
    first_trailer = pages[0].rsplit("\n", 1)[1]
    first_end = int(_NEXT.search(first_trailer).group(1))
    assert _REMAIN.search(first_trailer).group(1) == f"{len(text) - first_end:,}"


def test_fetch_from_zero_covers_the_whole_text_exactly(store):
    text = "".join(f"{i}," for i in range(3000))
    ref = store.put(text)
    read, pages = _read_all(ref, store, 0, 1000)
    assert read == text
    assert len(pages) == -(-len(text) // 1000)  # ASCII: exact 1,000-char pages


def test_chinese_and_emoji_are_never_cut(store):
    text = _mixed_text(3000)
    bounds = _boundaries(text)
    for budget in range(300, 1400, 37):
        result = spill(text, budget_chars=budget, store=store)
        assert len(result.text) <= budget
        assert result.shown_chars in bounds, budget
    for length in (1, 3, 7, 50):
        read, pages = _read_all(store.put(text), store, 0, length)
        assert read == text
        starts = [0]
        for page in pages[:-1]:
            starts.append(int(_NEXT.search(page.rsplit("\n", 1)[1]).group(1)))
        assert set(starts) <= bounds
    family = text.index("👨‍👩‍👧‍👦")
    page = fetch(store.put(text), family + 2, 1, store=store)
    assert page.startswith("👨‍👩‍👧‍👦\n")  # widened to the whole cluster both ways


def test_grapheme_bounds_far_into_text_without_ascii():
    text = "中文" * 10_000 + "👨‍👩‍👧" + "汉字" * 100
    at = text.index("👨‍👩‍👧")
    assert grapheme_bounds(text, at + 1) == (at, at + len("👨‍👩‍👧"))
    assert grapheme_bounds(text, at) == (at, at)
    assert grapheme_bounds(text, -5) == (0, 0)
    assert grapheme_bounds(text, len(text) + 5) == (len(text), len(text))


def test_budget_is_respected_for_every_budget_and_shape(store):
    random.seed(3)
    ids = [f"{random.getrandbits(32):08x}" for _ in range(300)]
    shapes = [
        "x" * 20_000,
        _mixed_text(4000),
        json.dumps(_records(300, ids), ensure_ascii=False),
        json.dumps({"results": _records(300, ids), "total": 300}, ensure_ascii=False),
    ]
    for text in shapes:
        for budget in (110, 200, 260, 400, 777, 1500, 3000, 5000):
            for preview in (None, 0, 50, 10_000):
                result = spill(text, budget_chars=budget, preview_chars=preview, store=store)
                assert len(result.text) <= budget, (budget, preview)
                assert result.shown_chars <= (preview if preview is not None else budget)
                assert "ctxledger" in MarkerScanner().find(result.text)


def test_a_budget_too_small_for_the_marker_raises_and_stores_nothing(store):
    with pytest.raises(ValueError, match="cannot hold a spill marker"):
        spill("y" * 1000, budget_chars=40, store=store)
    assert not store.directory.exists() or list(store.directory.iterdir()) == []
    with pytest.raises(ValueError):
        spill("y", budget_chars=0, store=store)


def test_ids_of_all_500_records_are_listed_in_a_small_budget(store):
    random.seed(11)
    ids = [f"{random.getrandbits(32):08x}" for _ in range(500)]
    rows = _records(500, ids)
    result = spill(rows, budget_chars=6000, store=store)  # ~10 % of the result
    assert result.total_chars > 50_000
    assert len(result.text) <= 6000
    assert result.items == 500 and result.ids_listed == 500
    listed = result.text.split("ids of all: ", 1)[1].rstrip("]").split(", ")
    assert listed == ids
    assert result.shown_chars > 0  # and still a preview


def test_consecutive_ids_collapse_to_a_run(store):
    rows = _records(500, [f"ord-{i:05d}" for i in range(1, 501)])
    result = spill({"items": rows, "total": 500}, budget_chars=1000, store=store)
    assert len(result.text) <= 1000 and result.ids_listed == 500
    assert "500 items, ids of all (a..b = a run of consecutive ids): ord-00001..ord-00500]" in (
        result.text
    )
    ints = spill(
        [{"id": i} for i in [1, 2, 3, 4, 9, 10, 11, 20]] * 40, budget_chars=1200, store=store
    )
    assert (
        ints.ids_listed == 320
        and "ids of all (a..b = a run of consecutive ids): 1..4, 9..11, 20, 1..4" in ints.text
    )


def test_ids_that_do_not_all_fit_are_listed_first_ones_and_said_so(store):
    random.seed(5)
    ids = [f"{random.getrandbits(32):08x}" for _ in range(500)]
    result = spill(_records(500, ids), budget_chars=1500, store=store)
    assert len(result.text) <= 1500
    assert 0 < result.ids_listed < 500
    assert f"500 items, ids of the first {result.ids_listed}: " in result.text
    assert ", ".join(ids[: result.ids_listed]) + ", … (the rest are in" in result.text
    assert result.shown_chars >= 400  # the preview keeps about half the room


def test_records_without_ids_give_the_count(store):
    result = spill([{"v": "x" * 50} for _ in range(100)], budget_chars=800, store=store)
    assert "; 100 items (without ids)]" in result.text
    assert result.items == 100 and result.ids_listed == 0


def test_ttl_expiry_with_explicit_now(tmp_path):
    store = DirectorySpillStore(tmp_path, ttl_s=60)
    ref = store.put("keep me for a minute")
    start = time.time()
    assert store.sweep(now=start + 30) == 0
    assert store.get(ref) == "keep me for a minute"
    assert store.sweep(now=start + 61) == 1
    assert store.get(ref) is None
    assert "has expired or never existed; re-run the tool" in fetch(ref, store=store)


def test_get_honours_the_ttl_without_a_sweep(tmp_path):
    store = DirectorySpillStore(tmp_path, ttl_s=60)
    ref = store.put("old")
    past = time.time() - 120
    os.utime(store.path_for(ref), (past, past))
    assert store.get(ref) is None
    forever = DirectorySpillStore(tmp_path / "forever", ttl_s=None)
    ref = forever.put("old")
    os.utime(forever.path_for(ref), (0, 0))
    assert forever.sweep() == 0 and forever.get(ref) == "old"


def test_size_cap_evicts_oldest_first(tmp_path):
    store = DirectorySpillStore(tmp_path, max_bytes=2500)
    base = time.time() - 100
    a = store.put("a" * 1000)
    os.utime(store.path_for(a), (base, base))
    b = store.put("b" * 1000)
    os.utime(store.path_for(b), (base + 1, base + 1))
    c = store.put("c" * 1000)  # 3,000 bytes > 2,500: the oldest goes
    assert store.get(a) is None
    assert store.get(b) == "b" * 1000 and store.get(c) == "c" * 1000
    big = store.put("d" * 5000)  # over the cap on its own: kept, the others go
    assert store.get(big) == "d" * 5000
    assert store.get(b) is None and store.get(c) is None


@pytest.mark.parametrize(
    "ref",
    [
        "../secret",
        "spill_0123456789abcdef/../../secret",
        "../spill_0123456789abcdef",
        "/etc/passwd",
        "spill_0123456789ABCDEF",
        "spill_0123456789abcdef\n",
        "spill_0123456789abcde",
        "",
    ],
)
def test_refs_outside_the_pattern_are_rejected(tmp_path, ref):
    (tmp_path / "secret.txt").write_text("do not read", encoding="utf-8")
    store = DirectorySpillStore(tmp_path / "spill")
    with pytest.raises(InvalidRefError, match="expected 'spill_' followed by 16"):
        store.get(ref)
    with pytest.raises(InvalidRefError):
        store.delete(ref)
    message = fetch(ref, store=store)
    assert "is not a valid spill reference" in message
    assert "do not read" not in message
    assert (tmp_path / "secret.txt").exists()


def test_unknown_ref_gives_the_model_a_message():
    message = fetch("spill_0000000000000000", store=MemoryStore())
    assert message == (
        'ref "spill_0000000000000000" has expired or never existed; '
        "re-run the tool to get its result"
    )


def test_offset_past_the_end_says_nothing_remains(store):
    ref = store.put("abc")
    assert "past the end" in fetch(ref, 3, store=store)
    assert fetch(ref, -10, 2, store=store).startswith("ab\n[ctxledger: page — chars 0–2 of 3")


def test_a_custom_store_is_used_for_spill_and_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLEDGER_SPILL_DIR", str(tmp_path / "default"))
    mem = MemoryStore()
    assert isinstance(mem, SpillStore)
    text = "第一行\n" * 2000
    result = spill(text, budget_chars=500, store=mem)
    assert result.ref == "mem-1" and mem.data["mem-1"] == text
    assert 'fetch_result(ref="mem-1", offset=' in result.text
    read, _ = _read_all("mem-1", mem, result.shown_chars, 1234)
    assert text[: result.shown_chars] + read == text
    assert not (tmp_path / "default").exists()


def test_default_store_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLEDGER_SPILL_DIR", str(tmp_path / "env-dir"))
    result = spill("q" * 3000, budget_chars=600)
    assert (tmp_path / "env-dir" / f"{result.ref}.txt").read_text(encoding="utf-8") == "q" * 3000
    assert fetch(result.ref, 2990).startswith("qqqqqqqqqq\n[ctxledger: page")
    monkeypatch.delenv("CTXLEDGER_SPILL_DIR")
    assert spill_mod.default_spill_dir().name == "ctxledger-spill"


def test_spilled_is_frozen(store):
    result = spill("w" * 2000, budget_chars=500, store=store)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


def test_fetch_tool_schema_is_an_openai_function_tool():
    schema = fetch_tool_schema()
    assert json.loads(json.dumps(schema)) == schema
    function = schema["function"]
    assert schema["type"] == "function" and function["name"] == "fetch_result"
    assert function["parameters"]["required"] == ["ref"]
    assert set(function["parameters"]["properties"]) == {"ref", "offset", "length"}
    assert fetch_tool_schema("read_result")["function"]["name"] == "read_result"


def test_spill_is_judged_declared_by_the_local_ledger(tmp_path, store):
    ledger = tmp_path / "l.txt"
    client = ctxledger.configure(service_name="test", export=False, ledger=str(ledger))
    try:
        rows = _records(500, [f"ord-{i:05d}" for i in range(500)])
        spilled = spill(rows, budget_chars=2000, store=store)
        with ctxledger.run():
            ctxledger.measure("original", rows, tool_call_id="c_spill", tool_name="orders")
            ctxledger.measure(
                "serialized",
                spilled.text,
                tool_call_id="c_spill",
                tool_name="orders",
                **spilled.declaration(),
            )
        ctxledger.flush()
        lines = ledger.read_text(encoding="utf-8").splitlines()
    finally:
        client.shutdown()
    assert any("orders[c_spill] serialized" in ln and "declared=spill" in ln for ln in lines)
    losses = [ln for ln in lines if " LOSS " in ln and "c_spill" in ln]
    assert losses and all("LOSS declared" in ln for ln in losses), lines
