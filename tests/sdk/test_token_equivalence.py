"""Every fast counter (fastokens, bpe-openai) gives tiktoken's count on every kind of
text, for both encodings: the condition under which the SDK uses it.

tiktoken is the reference (``tests/tiktoken_reference.py``: tiktoken's own definitions,
offline). The SDK counts ordinary text (``encode_ordinary``: a special token's text is
plain text) and handles lone surrogates as tiktoken's ``encode_ordinary`` does. A class
of input on which the two disagreed would have to be routed to tiktoken; none does.
"""

from __future__ import annotations

import functools
import json
import logging
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.tiktoken_reference import reference_count, reference_encoding, requires_bpe_openai

from ctxledger._fast_counter import (
    BACKENDS,
    PROBES,
    Backend,
    FastCounter,
    fast_counter,
    load_fast_counter,
)
from ctxledger._tokens import TokenCounter

pytestmark = requires_bpe_openai

ENCODINGS = ("cl100k_base", "o200k_base")
BACKEND_NAMES = tuple(backend.name for backend in BACKENDS)
PER_CLASS = 500


@functools.cache
def backend_counter(encoding: str, name: str) -> FastCounter:
    """``encoding`` counted by the backend ``name`` alone (each is installed here)."""
    (backend,) = [b for b in BACKENDS if b.name == name]
    counter = load_fast_counter(encoding, [backend])
    assert counter is not None, f"{name} does not count {encoding} here"
    assert counter.backend == name
    return counter


# fmt: off
SEED_CHINESE = (
    "先别急着怀疑模型。", "检索返回了 50 条，上下文里只剩 20 条。",
    "退款规则第3条：订单超过七天未发货", "数据", "分析", "用户", "订单", "上下文",
    "工具调用", "已截断：共 500 行，省略中间 400 行", "完整结果见引用", "北京", "上海",
    "，", "。", "；", "、", "（", "）", "“", "”",
)
OTHER_CJK = (
    "日本語のテキストです。", "カタカナ", "ひらがな", "한국어 문장입니다.", "漢字",
    "ｆｕｌｌｗｉｄｔｈ",
)
EMOJI = (
    "😀", "👍🏽", "👩‍👩‍👧", "👨‍💻", "🏳️‍🌈", "🏴‍☠️", "🇨🇳", "🇺🇸", "1️⃣", "❤️", "🧑🏿‍🤝‍🧑🏻", "\u200d",
    "\ufe0f", "👁️‍🗨️",
)
MIXED_SCRIPTS = (
    "Ωμέγα", "привет", "مرحبا", "שלום", "नमस्ते", "ไทย", "ქართული", "Հայերեն", "e\u0301", "a\u0308",
    "ǅ", "ﬁ", "ß", "İstanbul", "ΣΊΣΥΦΟΣ", "\u0345", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ⅻ", "①", "²", "٣", "߀",
)
WHITESPACE = (
    " ", "  ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000",
    "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff", "\x1c",
)
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|reserved_200013|>",
    "<|endof", "|>", "<|", "<||>",
)
CONTRACTIONS = (
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "I'm", "DON'T", "’s",
)
WORDS = ("the", "invoice", "latency", "Tokenizer", "HTTP", "getUserById", "snake_case", "x", "A")
PUNCTUATION = ("{", "}", "[", "]", "(", ")", '"', "'", ":", ",", ".", ";", "/", "//", "/*", "*/",
               "->", "=>", "...", "…", "—", "-", "_", "#", "@", "$", "%", "\\", "\\n", "`", "~")
# fmt: on


def _join(rng: random.Random, pools: tuple[tuple[str, ...], ...], pieces: int) -> str:
    return "".join(rng.choice(rng.choice(pools)) for _ in range(pieces))


def _cjk(rng: random.Random) -> str:
    return _join(rng, (SEED_CHINESE, OTHER_CJK, WHITESPACE[:4], WORDS), rng.randint(1, 60))


def _emoji(rng: random.Random) -> str:
    return _join(rng, (EMOJI, WORDS, WHITESPACE[:3], SEED_CHINESE), rng.randint(1, 40))


def _code(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 30)):
        indent = rng.choice(("", "    ", "        ", "\t", "  "))
        body = _join(rng, (WORDS, PUNCTUATION, (" ", " = ", "(", ")", "0", "42")), 8)
        lines.append(indent + body + rng.choice(("", "  # note", " // todo", ";")))
    return rng.choice(("\n", "\r\n")).join(lines) + rng.choice(("", "\n", "\n\n", "   \n"))


def _logs(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 40)):
        level = rng.choice(("INFO", "WARN", "ERROR", "DEBUG", "[INFO]", "E"))
        lines.append(
            f"2024-06-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z {level} "
            f"pid={rng.randint(1, 99999)} {_join(rng, (WORDS, SEED_CHINESE, PUNCTUATION), 6)}"
        )
    return "\n".join(lines)


def _json(rng: random.Random) -> str:
    records = [
        {
            "id": f"doc-{i:06d}",
            "title": _join(rng, (SEED_CHINESE, WORDS, EMOJI), rng.randint(1, 8)),
            "score": rng.random(),
            "count": rng.randint(-(10**12), 10**12),
            "tags": [rng.choice(WORDS + MIXED_SCRIPTS) for _ in range(rng.randint(0, 3))],
            "nested": {"ok": rng.random() < 0.5, "none": None},
        }
        for i in range(rng.randint(1, 12))
    ]
    return json.dumps(
        {"results": records},
        ensure_ascii=rng.random() < 0.3,
        indent=rng.choice((None, None, 2, 4)),
    )


def _digits(rng: random.Random) -> str:
    run = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 300)))
    around = rng.choice(("", " ", "x", "-", ".", "v", "中", "\n", "1,000,000.50 ", "٣٤٥"))
    return around + run + rng.choice(("", " ", "%", "e10", "th", ".0"))


def _whitespace(rng: random.Random) -> str:
    parts = [
        "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 40)))
        if rng.random() < 0.6
        else rng.choice(WORDS + SEED_CHINESE + PUNCTUATION + ("1", "a", "A"))
        for _ in range(rng.randint(1, 12))
    ]
    return "".join(parts)


def _mixed(rng: random.Random) -> str:
    pools = (MIXED_SCRIPTS, WORDS, SEED_CHINESE, EMOJI, PUNCTUATION, WHITESPACE[:5], CONTRACTIONS)
    return _join(rng, pools, rng.randint(1, 50))


def _special(rng: random.Random) -> str:
    pools = (SPECIAL_TOKENS, WORDS, WHITESPACE[:4], PUNCTUATION, SEED_CHINESE)
    return _join(rng, pools, rng.randint(1, 30))


def _contractions(rng: random.Random) -> str:
    pools = (CONTRACTIONS, WORDS, MIXED_SCRIPTS, (" ", "'", "''", "\n"))
    return _join(rng, pools, rng.randint(1, 30))


def _random_code_points(rng: random.Random) -> str:
    chars = []
    for _ in range(rng.randint(1, 60)):
        high = rng.choice((0x7F, 0x7FF, 0xFFFF, 0x10FFFF))
        code_point = rng.randint(0, high)
        if 0xD800 <= code_point <= 0xDFFF:
            code_point -= 0x800
        chars.append(chr(code_point))
    return "".join(chars)


def _surrogates(rng: random.Random) -> str:
    """Text with lone surrogates and surrogate pairs written as two code points (what
    ``json.loads`` makes of ``"\\ud83d"`` or of a cut ``"\\ud83d\\ude00"``)."""
    pools = (
        ("\ud800", "\udfff", "\ud83d", "\ude00", "\ud83d\ude00", "\udbff\udfff", "\ud800\ud800"),
        WORDS,
        SEED_CHINESE,
        EMOJI,
        WHITESPACE[:4],
    )
    return _join(rng, pools, rng.randint(1, 30)) + rng.choice(("", "\ud83d"))


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "cjk": _cjk,
    "emoji": _emoji,
    "code": _code,
    "logs": _logs,
    "json": _json,
    "digits": _digits,
    "whitespace": _whitespace,
    "mixed_scripts": _mixed,
    "special_tokens": _special,
    "contractions": _contractions,
    "random_code_points": _random_code_points,
    "surrogates": _surrogates,
}


def corpus(kind: str) -> list[str]:
    rng = random.Random(f"ctxledger-token-equivalence:{kind}")
    return [GENERATORS[kind](rng) for _ in range(PER_CLASS)]


def _large_texts() -> list[str]:
    """Results as big as the SDK counts exactly (up to its default 1,048,576 chars)."""
    rng = random.Random("ctxledger-token-equivalence:large")
    texts = []
    for kind in ("json", "logs", "cjk", "code", "whitespace", "surrogates"):
        parts: list[str] = []
        size = 0
        target = rng.choice((100_000, 400_000, 1_048_576))
        while size < target:
            parts.append(GENERATORS[kind](rng))
            size += len(parts[-1])
        texts.append("".join(parts)[:target])
    texts += [" " * 200_000, "\n" * 100_000, "1234567890" * 30_000, "a" * 100_000, "中" * 300_000]
    return texts


@pytest.mark.parametrize("backend", BACKEND_NAMES)
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_fast_counts_equal_tiktoken_counts(kind, encoding, backend):
    fast = backend_counter(encoding, backend)
    texts = corpus(kind)
    mismatches = [
        (text, fast.count(text), reference_count(text, encoding))
        for text in texts
        if fast.count(text) != reference_count(text, encoding)
    ]
    assert not mismatches, f"{len(mismatches)}/{len(texts)} {kind} texts differ: {mismatches[:3]}"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_sdks_counts_of_many_texts_equal_tiktokens(encoding):
    texts = corpus("json") + corpus("mixed_scripts")
    assert TokenCounter().count_many(texts, encoding) == [
        reference_count(text, encoding) for text in texts
    ]


@pytest.mark.parametrize("backend", BACKEND_NAMES)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_fast_counts_equal_tiktoken_counts_on_large_results(encoding, backend):
    fast = backend_counter(encoding, backend)
    for text in _large_texts():
        assert fast.count(text) == reference_count(text, encoding), text[:80]


def test_o200k_harmony_counts_are_o200k_base_counts():
    harmony = fast_counter("o200k_harmony")
    assert harmony is not None
    for text in corpus("special_tokens") + corpus("mixed_scripts"):
        assert harmony.count(text) == reference_count(text, "o200k_base")


def test_the_run_time_probes_hold_tiktokens_counts():
    for text, expected in PROBES:
        assert expected == {encoding: reference_count(text, encoding) for encoding in ENCODINGS}


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_special_token_text_is_counted_as_ordinary_text(backend):
    text = "a<|endoftext|>b"
    for encoding in ENCODINGS:
        ordinary = reference_encoding(encoding).encode_ordinary(text)
        assert len(ordinary) > 3  # not the one special token
        assert backend_counter(encoding, backend).count(text) == len(ordinary)


def _counting_backend(name: str, count: Callable[[str], int]) -> Backend:
    return Backend(name, lambda encoding: count)


def test_a_backend_that_miscounts_a_probe_is_passed_over_for_the_next(caplog):
    reference = backend_counter("o200k_base", "bpe-openai")
    off_by_one = _counting_backend("off-by-one", lambda text: reference.count(text) + 1)
    exact = _counting_backend("exact", reference.count)
    with caplog.at_level(logging.WARNING, logger="ctxledger"):
        chosen = load_fast_counter("o200k_base", [off_by_one, exact])
    assert chosen is not None and chosen.backend == "exact"
    assert "off-by-one counts 3 o200k_base tokens where tiktoken counts 2" in caplog.text
    assert load_fast_counter("o200k_base", [off_by_one]) is None  # tiktoken counts then


def test_a_backend_that_fails_to_load_is_passed_over_with_a_warning(caplog):
    def broken(encoding: str) -> Callable[[str], int]:
        raise OSError("cannot map the vocabulary")

    exact = _counting_backend("exact", backend_counter("cl100k_base", "bpe-openai").count)
    absent = Backend("absent", lambda encoding: None)
    with caplog.at_level(logging.WARNING, logger="ctxledger"):
        chosen = load_fast_counter("cl100k_base", [Backend("broken", broken), absent, exact])
    assert chosen is not None and chosen.backend == "exact"
    assert "broken cannot count cl100k_base (OSError('cannot map the vocabulary'))" in caplog.text
    assert "absent" not in caplog.text  # not installed is not worth a warning


def test_fastokens_reads_its_vocabulary_from_a_temporary_file_it_removes(tmp_path, monkeypatch):
    import tempfile

    from ctxledger import _fastokens

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    count = _fastokens.load_count("cl100k_base")
    assert count is not None and count("hello world") == 2
    assert list(tmp_path.iterdir()) == []


# Hypothesis: any text, surrogates included, and texts built from the hard pieces above.
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=300)
PIECES = st.lists(
    st.sampled_from(
        SEED_CHINESE
        + EMOJI
        + MIXED_SCRIPTS
        + WHITESPACE
        + SPECIAL_TOKENS
        + CONTRACTIONS
        + WORDS
        + PUNCTUATION
        + ("0", "12", "123", "1234", "\ud800", "\udc00", "\ud83d\ude00")
    ),
    max_size=80,
).map("".join)


@pytest.mark.parametrize("backend", BACKEND_NAMES)
@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=600, deadline=None)
@given(text=st.one_of(ANY_TEXT, PIECES))
def test_fast_counts_equal_tiktoken_counts_on_generated_text(encoding, backend, text):
    assert backend_counter(encoding, backend).count(text) == reference_count(text, encoding)


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_counts_from_several_threads_at_once_are_exact(backend):
    """fastokens releases the GIL while it counts, so the worker and a flushing agent
    thread (or a remedy counting on the agent's thread) may count at the same time."""
    import threading

    texts = corpus("json")[:100] + corpus("cjk")[:100]
    expected = [reference_count(text, "o200k_base") for text in texts]
    counter = backend_counter("o200k_base", backend)
    failures: list[str] = []

    def count_all() -> None:
        for _ in range(5):
            got = [counter.count(text) for text in texts]
            if got != expected:
                failures.append(
                    f"{sum(g != e for g, e in zip(got, expected, strict=True))} counts differ"
                )

    threads = [threading.Thread(target=count_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
