"""The default counter: bpe-openai counts from the start (quick to load), fastokens takes
over once the process has counted enough for its load to pay; counting never waits for
that load, and the counts stay tiktoken's throughout."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.sdk.test_token_equivalence import backend_counter, corpus
from tests.tiktoken_reference import reference_count, requires_bpe_openai

from ctxledger._fast_counter import fast_counter
from ctxledger._tokens import counting_for
from ctxledger._upgrading_counter import UPGRADE_AFTER_CHARS, ExactCounter, UpgradingCounter

pytestmark = requires_bpe_openai

ROOT = Path(__file__).resolve().parents[2]
THREAD = "ctxledger-token-counter"


def _loading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def _wait_for_loads() -> None:
    for thread in _loading_threads():
        thread.join(30)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_fastokens_takes_over_once_enough_is_counted_and_the_counts_stay_tiktokens(
    encoding: str,
) -> None:
    texts = corpus("json")[:200]
    loads: list[str] = []

    def load() -> ExactCounter:
        loads.append(threading.current_thread().name)
        return backend_counter(encoding, "fastokens")

    after = sum(len(t) for t in texts) // 2
    counter = UpgradingCounter(backend_counter(encoding, "bpe-openai"), load, after_chars=after)
    counts = []
    for text in texts:
        if not counter.upgraded.is_set():
            assert counter.backend == "bpe-openai"
        counts.append(counter.count(text))
    assert counter.upgraded.wait(60)
    assert counter.backend == "fastokens" and counter.describe().startswith("fastokens ")
    counts += [counter.count(text) for text in texts]
    assert loads == [THREAD]  # once, on a thread of its own
    assert counts == [reference_count(text, encoding) for text in texts] * 2


def test_nothing_is_loaded_before_enough_is_counted() -> None:
    loads: list[str] = []

    def load_none() -> None:
        loads.append("load")

    first = backend_counter("o200k_base", "bpe-openai")
    counter = UpgradingCounter(first, load_none, after_chars=1_000)
    for text in ("x" * 400, "中" * 599):
        counter.count(text)
    _wait_for_loads()
    assert loads == [] and counter.backend == "bpe-openai"
    counter.count("y")  # the 1,000th char
    _wait_for_loads()
    assert loads == ["load"]
    assert counter.backend == "bpe-openai" and not counter.upgraded.is_set()  # none came


def test_counting_never_waits_for_the_faster_counter() -> None:
    released = threading.Event()

    def slow_load() -> ExactCounter:
        released.wait(30)
        return backend_counter("o200k_base", "fastokens")

    counter = UpgradingCounter(backend_counter("o200k_base", "bpe-openai"), slow_load, 1)
    text = "检索返回了 50 条，上下文里只剩 20 条。"
    counter.count(text)  # starts the load, which blocks until released
    started = time.monotonic()
    assert counter.count(text) == reference_count(text, "o200k_base")
    assert time.monotonic() - started < 10  # answered while the load still waited
    assert counter.backend == "bpe-openai" and _loading_threads()
    released.set()
    assert counter.upgraded.wait(30) and counter.backend == "fastokens"


def test_a_faster_counter_that_fails_to_load_leaves_the_first_counting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> ExactCounter:
        raise RuntimeError("no vocabulary")

    counter = UpgradingCounter(backend_counter("cl100k_base", "bpe-openai"), broken, 1)
    with caplog.at_level(logging.WARNING, logger="ctxledger"):
        counter.count("start")
        _wait_for_loads()
    assert "the faster token counter did not load (RuntimeError('no vocabulary'))" in caplog.text
    assert counter.backend == "bpe-openai" and not counter.upgraded.is_set()
    assert counter.count("hello world") == 2


def test_by_default_the_sdk_counts_through_the_upgrading_counter() -> None:
    for encoding in ("cl100k_base", "o200k_base", "o200k_harmony"):
        fast = fast_counter(encoding)
        assert isinstance(fast, UpgradingCounter)
        assert counting_for(encoding) == (encoding, fast.count)
    assert fast_counter("o200k_harmony") is fast_counter("o200k_base")  # loaded once


# A fresh process with the default setting: bpe-openai first, fastokens once it has
# counted UPGRADE_AFTER_CHARS, the same counts before and after.
UPGRADE_IN_A_PROCESS = """
import json, sys
from ctxledger._fast_counter import fast_counter
from ctxledger._tokens import counting_for
after, text = int(sys.argv[1]), sys.argv[2]
name, count = counting_for("cl100k_base")
fast = fast_counter("cl100k_base")
before = (fast.backend, count(text), "fastokens" in sys.modules)
counted = len(text)
while counted < after:
    count(text)
    counted += len(text)
fast.upgraded.wait(60)
print(json.dumps({"before": before, "after": (fast.backend, count(text))}))
"""


def test_a_process_that_counts_enough_moves_to_fastokens() -> None:
    text = json.dumps(
        [{"标题": f"订单 {n}", "body": "the quick brown fox " * 40} for n in range(40)]
    )
    done = subprocess.run(
        [sys.executable, "-c", UPGRADE_IN_A_PROCESS, str(UPGRADE_AFTER_CHARS), text],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "sdk")},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = reference_count(text, "cl100k_base")
    assert json.loads(done.stdout) == {
        "before": ["bpe-openai", expected, False],
        "after": ["fastokens", expected],
    }


# The collector's setting: the fastest counter loads at the first count (and at once for
# a counter already counting); the quicker one answers meanwhile.
COLLECTOR_PROCESS = """
import json, sys
from ctxledger._fast_counter import fast_counter
from ctxledger._tokens import counting_for
from ctxledger.text import count_with_the_fastest_counter
text = sys.argv[1]
name, count = counting_for("cl100k_base")  # counting before the setting
first = (fast_counter("cl100k_base").backend, count(text))
if sys.argv[2] == "app":
    from ctxledger_collector.app import create_app
    from ctxledger_collector.ops.settings import Settings
    create_app(Settings(database_url=sys.argv[3]))
else:
    count_with_the_fastest_counter()
name, later = counting_for("o200k_base")  # its first count starts the load
later(text)
counters = [fast_counter(e) for e in ("cl100k_base", "o200k_base")]
for counter in counters:
    counter.upgraded.wait(60)
print(json.dumps({
    "first": first,
    "then": [(c.backend, c.count(text)) for c in counters],
}))
"""


@pytest.mark.parametrize("how", ["function", "app"])
def test_a_collector_counts_with_fastokens_from_its_first_count(how: str, tmp_path: Path) -> None:
    text = "检索返回了 50 条，上下文里只剩 20 条。" * 20
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            COLLECTOR_PROCESS,
            text,
            how,
            f"sqlite:///{tmp_path / 'ctxledger.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT / 'sdk'}:{ROOT / 'collector'}"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    cl100k, o200k = reference_count(text, "cl100k_base"), reference_count(text, "o200k_base")
    assert json.loads(done.stdout) == {
        "first": ["bpe-openai", cl100k],
        "then": [["fastokens", cl100k], ["fastokens", o200k]],
    }
