"""Does the collector keep up as conversations grow? The same number of LLM spans, as
many short runs or few long ones: every request re-sends the whole conversation, so the
bytes per run grow with the square of its steps.

    .venv/bin/python bench/conversation_growth.py             # 2,000 LLM spans a length
    .venv/bin/python bench/conversation_growth.py --llm-spans 400 --lengths 20,200
    .venv/bin/python bench/conversation_growth.py --usage   # spans report input tokens

For each conversation length (steps per run) it builds ``--llm-spans / length`` runs as
OpenTelemetry's openai-v2 instrumentation records them (``benchkit.conversation_runs``:
a ``chat`` span per step carrying the whole conversation, an ``execute_tool`` span per
call), one OTLP request per step, before anything is timed. Then, in this process, on a
fresh SQLite file: decode and derive each request (``decode_export_request``), then
store and judge it (``Store.ingest``), timed apart. In the same run the floor: the
protobuf decode of the same requests and one ``json.loads`` of each span's message
attributes, nothing else.

It prints, per length: spans/s (both kinds of span), MB/s of conversation JSON
(``gen_ai.input.messages`` bytes) end to end and for decode + derive alone, the share of
requests whose messages were parsed from their tail (``derive.parsed_prefixes``), decode
+ derive again (each result's text analysis now cached) from the tail and with every
request parsed whole (nothing kept between requests: the peer), the floor's,
end to end as a fraction of the floor's speed (``of floor``: a ratio of two measurements
of the same run, so less of the machine's drift), the share of time in storing and
judging, and the spans/s of each length against the first (the goal: the longest at 0.8
of the shortest or better). With ``--repeat N`` every length is measured N times, the
lengths taking turns, and each row is its length's fastest run (the ratio of each round
printed too). With ``--usage`` every chat span also reports its input
tokens (as openai-v2 records them), so each request gives a ``received`` stage per result
it carries too. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchkit.conversation_runs import SPANS_PER_STEP, EncodedRun, encoded_run
from benchkit.in_process import collector_seconds
from benchkit.tables import print_table
from ctxledger_collector.derive.parsed_prefixes import SHARED as PARSED_PREFIXES
from ctxledger_collector.ingest.otlp_decode import PROTOBUF, decode_export_request
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.migrate import upgrade

MESSAGE_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages")


@dataclass(frozen=True)
class Timing:
    steps: int
    runs: int
    spans: int
    conversation_bytes: int
    derive_s: float
    store_s: float
    floor_s: float
    #: Decode + derive again, the text analyses warm: from the tail, and parsed whole.
    rederive_s: float
    rederive_whole_s: float
    tail_share: float

    @property
    def total_s(self) -> float:
        return self.derive_s + self.store_s


def floor_seconds(bodies: list[bytes]) -> float:
    """Protobuf decode of each request and one json.loads of its message attributes."""
    started = time.perf_counter()
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    for attribute in span.attributes:
                        if attribute.key in MESSAGE_ATTRIBUTES:
                            json.loads(attribute.value.string_value)
    return time.perf_counter() - started


def derive_seconds(bodies: list[bytes], keep_prefixes: bool) -> float:
    """Decode and derive alone, parsing each request's messages from what is new in them
    or (``keep_prefixes`` False: nothing kept between requests) whole."""
    kept = PARSED_PREFIXES.max_chars
    PARSED_PREFIXES.max_chars = kept if keep_prefixes else 0
    try:
        started = time.perf_counter()
        for body in bodies:
            fit_to_columns(decode_export_request(body, PROTOBUF))
        return time.perf_counter() - started
    finally:
        PARSED_PREFIXES.max_chars = kept


def measure(steps: int, llm_spans: int, result_chars: int, usage: bool = False) -> Timing:
    runs = max(1, llm_spans // steps)
    encoded: list[EncodedRun] = [
        encoded_run(run, steps, result_chars, usage) for run in range(runs)
    ]
    bodies = [body for run in encoded for body in run.bodies]
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        upgrade(url)
        tails, wholes = PARSED_PREFIXES.tail_parses, PARSED_PREFIXES.whole_parses
        derive_s, store_s = collector_seconds(url, bodies)
    tails = PARSED_PREFIXES.tail_parses - tails
    wholes = PARSED_PREFIXES.whole_parses - wholes
    return Timing(
        steps=steps,
        runs=runs,
        spans=len(bodies) * SPANS_PER_STEP,
        conversation_bytes=sum(run.conversation_bytes for run in encoded),
        derive_s=derive_s,
        store_s=store_s,
        floor_s=floor_seconds(bodies),
        rederive_s=derive_seconds(bodies, keep_prefixes=True),
        rederive_whole_s=derive_seconds(bodies, keep_prefixes=False),
        tail_share=tails / max(1, tails + wholes),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-spans", type=int, default=2000)
    parser.add_argument("--lengths", default="20,200", help="steps per run, comma-separated")
    parser.add_argument("--result-chars", type=int, default=1000)
    parser.add_argument(
        "--usage",
        action="store_true",
        help="chat spans report their input tokens, so each request gives received stages",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure every length this many times, the lengths taking turns; each row is "
        "its length's fastest (this machine's drift shows less in the ratio)",
    )
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    measure(lengths[0], min(args.llm_spans, 40), args.result_chars, args.usage)  # warm
    rounds = [
        [measure(steps, args.llm_spans, args.result_chars, args.usage) for steps in lengths]
        for _ in range(max(1, args.repeat))
    ]
    timings = [min(column, key=lambda t: t.total_s) for column in zip(*rounds, strict=True)]
    if len(rounds) > 1:
        ratios = [
            (r[0].total_s / r[0].spans) / (t.total_s / t.spans) for r in rounds for t in r[1:]
        ]
        print("spans/s vs first, each round:", ", ".join(f"{x:.2f}" for x in ratios))
    first = timings[0]
    rows = []
    for t in timings:
        mb = t.conversation_bytes / 1e6
        rows.append([
            f"{t.steps}", f"{t.runs}", f"{t.spans:,}", f"{mb:,.1f}",
            f"{t.spans / t.total_s:,.0f}", f"{mb / t.total_s:,.1f}", f"{mb / t.derive_s:,.1f}",
            f"{t.tail_share:.0%}", f"{mb / t.rederive_s:,.1f}", f"{mb / t.rederive_whole_s:,.1f}",
            f"{t.spans / t.floor_s:,.0f}", f"{mb / t.floor_s:,.1f}", f"{t.floor_s / t.total_s:.3f}",
            f"{t.store_s / t.total_s:.0%}",
            f"{(t.spans / t.total_s) / (first.spans / first.total_s):.2f}",
        ])  # fmt: skip
    print_table(
        ["steps/run", "runs", "spans", "conv. MB", "spans/s", "MB/s", "derive MB/s",
         "from tail", "again MB/s", "again whole MB/s",
         "floor spans/s", "floor MB/s", "of floor", "store+judge", "spans/s vs first"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    main()
