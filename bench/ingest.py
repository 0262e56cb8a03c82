"""End-to-end ingest throughput of the collector: spans per second stored *and judged*.

Run from the repository root::

    PYTHONPATH=sdk:collector python bench/ingest.py

For SQLite (a temporary file) and PostgreSQL (a fresh temporary database, created and
dropped here) it starts ``ctxledger serve`` as a subprocess on a free loopback port and
feeds it pre-built contract spans with the stock OpenTelemetry ``OTLPSpanExporter``
(protobuf over real HTTP), in batches of 512 from 2 client threads. The collector answers
an export only after the batch is committed and its journeys re-judged, so the wall time
from the first export to the last successful return is the time to store and judge every
span. At the end the rows in the database are counted and compared with the spans sent.

Workload: runs (traces) of an agent with 6 LLM requests; the responses to the first five
issue 4 tool calls each, and every tool result is measured at the stages original,
serialized (step of the call) and assembled, sent (in the next request): 20 tool calls x
4 stages = 80 measurement spans, plus one manifest span per request listing the tool calls
and results the request carries (the conversation so far): 86 spans per run. Every
measurement carries the attributes the SDK emits, with ~20 item ids and 8 field names.
About 10 % of the results are truncated with a marker at ``assembled`` (``declared``) and
about 3 % lose records silently at ``sent`` (``silent``); the rest arrive intact.

The spans are created with the stock SDK ``TracerProvider`` and ``InMemorySpanExporter``
before any timing starts. This is a benchmark: it reports numbers and asserts nothing
about them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import create_engine, text

from ctxledger import semconv as sc

REPO = Path(__file__).resolve().parent.parent
SEED = 20240611
STEPS = 5  # LLM responses that issue tool calls; requests are 1 .. STEPS + 1
CALLS_PER_STEP = 4
SPANS_PER_RUN = STEPS * CALLS_PER_STEP * 4 + (STEPS + 1)
DEFAULT_PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REFERENCES = (
    ("protobuf parse plus batched SQLite insert (floor, one core)", "~23,000 spans/s"),
    ("Arize Phoenix stores", "146 spans/s"),
)

_TOOLS = ("search_orders", "get_customer", "read_file", "sql_query", "web_fetch", "list_tickets")
_FIELDS = ("id", "customer", "status", "region", "amount", "currency", "created_at", "note")


# --- workload --------------------------------------------------------------------------


def _hex(rng: random.Random, nbytes: int) -> str:
    return rng.randbytes(nbytes).hex()


def _sha(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


@dataclass(frozen=True)
class Stage:
    """The measured facts of one tool result at one stage."""

    chars: int
    tokens: int
    item_ids: tuple[str, ...]
    sha256: str
    canonical_sha256: str
    canonical_chars: int
    declared: bool = False
    marker: bool = False


def _stage_attrs(
    stage: str,
    call_id: str,
    tool: str,
    step: int,
    request_id: str | None,
    facts: Stage,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        sc.STAGE: stage,
        sc.STAGE_ORDER: sc.BUILTIN_STAGE_ORDER[stage],
        sc.TOOL_CALL_ID: call_id,
        sc.SIZE_CHARS: facts.chars,
        sc.SIZE_BYTES: facts.chars + facts.chars // 5,
        sc.CONTENT_SHA256: facts.sha256,
        sc.JSON_VALID: True,
        sc.TOOL_NAME: tool,
        sc.STEP: step,
        sc.AGENT_NAME: "bench-agent",
        sc.SIZE_TOKENS: facts.tokens,
        sc.TOKENIZER: "cl100k_base",
        sc.SIZE_ITEMS: len(facts.item_ids),
        sc.ITEMS_PRIORITY: 0,
        sc.CONTENT_CANONICAL_SHA256: facts.canonical_sha256,
        sc.SIZE_CANONICAL_CHARS: facts.canonical_chars,
        sc.ITEMS_IDS: list(facts.item_ids),
        sc.ITEMS_IDS_COMPLETE: True,
        sc.ITEMS_FIELDS: list(_FIELDS),
        sc.ITEMS_FIELDS_COMPLETE: True,
        sc.TRUNCATION_MARKER: facts.marker,
    }
    if request_id is not None:
        attrs[sc.REQUEST_ID] = request_id
    if facts.declared:
        attrs[sc.TRUNCATION_DECLARED] = True
        attrs[sc.TRUNCATION_STRATEGY] = "head_rows"
        attrs[sc.TRUNCATION_MARKERS_FOUND] = ["omitted"]
    return attrs


def _journey(rng: random.Random) -> list[Stage]:
    """The four stages of one tool result: intact, truncated with a marker, or silent."""
    ids = tuple(f"ord-{rng.randrange(10**7):07d}" for _ in range(20))
    chars = rng.randrange(1_500, 30_000)
    canonical = _sha(rng)
    original = Stage(chars, chars // 4, ids, _sha(rng), canonical, chars - chars // 10)
    serialized = Stage(
        chars + 40, chars // 4 + 10, ids, _sha(rng), canonical, original.canonical_chars
    )
    fate = rng.random()
    if fate < 0.10:  # truncated at assembly, with a marker the model can see
        kept = ids[:12]
        short = chars * 12 // 20
        cut = Stage(short, short // 4, kept, _sha(rng), _sha(rng), short - short // 10, True, True)
        return [original, serialized, cut, cut]
    if fate < 0.13:  # records lost on the way out, nothing says so
        kept = ids[:15]
        short = chars * 15 // 20
        cut = Stage(short, short // 4, kept, _sha(rng), _sha(rng), short - short // 10)
        return [original, serialized, serialized, cut]
    return [original, serialized, serialized, serialized]


def build_spans(target: int) -> list[ReadableSpan]:
    """Whole runs of contract spans, at least ``target`` of them, in emission order."""
    rng = random.Random(SEED)
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(
            {sc.SERVICE_NAME: "ctxledger-bench", sc.SDK_NAME: "ctxledger", sc.SDK_VERSION: "bench"}
        )
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("ctxledger-bench")
    runs = -(-target // SPANS_PER_RUN)
    clock = time.time_ns() - runs * 60 * 10**9  # runs of about a minute, ending now
    stage_names = (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT)

    def emit(parent: trace.Span, name: str, attrs: dict[str, Any]) -> None:
        nonlocal clock
        start = clock
        clock += rng.randrange(50_000, 2_000_000)
        span = tracer.start_span(
            name, context=trace.set_span_in_context(parent), attributes=attrs, start_time=start
        )
        span.end(end_time=clock)

    for _ in range(runs):
        root = tracer.start_span(sc.SPAN_RUN, start_time=clock)
        requests = [f"req_{_hex(rng, 12)}" for _ in range(STEPS + 1)]
        history: list[str] = []
        pending: list[tuple[str, str, list[Stage]]] = []
        for step in range(1, STEPS + 2):
            if step > 1:  # the results of the previous response travel in this request
                for call_id, tool, stages in pending:
                    for stage, facts in zip(stage_names[2:], stages[2:], strict=True):
                        emit(
                            root,
                            f"{sc.SPAN_MEASUREMENT} {stage}",
                            _stage_attrs(stage, call_id, tool, step, requests[step - 1], facts),
                        )
            emit(
                root,
                sc.SPAN_MANIFEST,
                {
                    sc.REQUEST_ID: requests[step - 1],
                    sc.REQUEST_TOOL_CALL_IDS: list(history),
                    sc.REQUEST_TOOL_CALLS: list(history),
                    sc.STEP: step,
                    sc.REQUEST_MODEL: "gpt-4o-2024-08-06",
                    sc.AGENT_NAME: "bench-agent",
                    sc.REQUEST_CONTEXT_WINDOW: 128_000,
                    sc.REQUEST_TOKENS: 2_000 + 1_500 * len(history),
                    sc.TOKENIZER: "cl100k_base",
                    sc.SDK_DROPPED_SPANS: 0,
                },
            )
            if step > STEPS:
                break
            pending = []
            for _ in range(CALLS_PER_STEP):
                call_id, tool = f"call_{_hex(rng, 12)}", rng.choice(_TOOLS)
                stages = _journey(rng)
                for stage, facts in zip(stage_names[:2], stages[:2], strict=True):
                    emit(
                        root,
                        f"{sc.SPAN_MEASUREMENT} {stage}",
                        _stage_attrs(stage, call_id, tool, step, None, facts),
                    )
                pending.append((call_id, tool, stages))
                history.append(call_id)
        root.end(end_time=clock)
    provider.shutdown()
    # The run span carries no contract attributes; the collector would ignore it.
    return [s for s in memory.get_finished_spans() if s.name != sc.SPAN_RUN]


# --- collector subprocess ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _child_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(REPO / "sdk"), str(REPO / "collector"), str(REPO / "cli")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["CTXLEDGER_DATABASE_URL"] = database_url
    for name in ("CTXLEDGER_API_KEYS", "CTXLEDGER_AUTO_MIGRATE"):
        env.pop(name, None)
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctxledger_cli", *args]


@contextmanager
def collector(database_url: str, log_path: Path) -> Iterator[str]:
    """``ctxledger serve`` on a free loopback port; yields its base URL once ready."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            _cli("serve", "--port", str(port), "--log-level", "warning"),
            env=_child_env(database_url),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"ctxledger serve exited with {process.returncode}:\n{_tail(log_path)}"
                    )
                try:
                    with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                        if answer.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"ctxledger serve never got ready:\n{_tail(log_path)}")
                time.sleep(0.1)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --- databases -----------------------------------------------------------------------


@contextmanager
def sqlite_database(workdir: Path) -> Iterator[str]:
    yield f"sqlite:///{workdir / 'ingest-bench.db'}"


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh database, migrated with ``ctxledger db upgrade``, dropped afterwards."""
    import psycopg

    name = f"ctxledger_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        server = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
        url = f"{server}/{name}"
        migrate = subprocess.run(
            _cli("db", "upgrade", "--database-url", url),
            env=_child_env(url),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"ctxledger db upgrade failed:\n{migrate.stderr[-3000:]}")
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- measurement ---------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    database: str
    spans: int
    seconds: float
    failed_batches: int
    measurements: int
    manifests: int
    reports: int
    runs_api: int
    verdicts: dict[str, int]


def feed(
    endpoint: str, batches: Sequence[Sequence[ReadableSpan]], threads: int
) -> tuple[float, int]:
    """Export every batch; returns the wall time and the number of failed exports."""
    exporters = [OTLPSpanExporter(endpoint=endpoint, timeout=120) for _ in range(threads)]
    lock = threading.Lock()
    cursor = iter(range(len(batches)))
    failures = [0] * threads

    def worker(index: int) -> None:
        while True:
            with lock:
                position = next(cursor, None)
            if position is None:
                return
            if exporters[index].export(batches[position]) is not SpanExportResult.SUCCESS:
                failures[index] += 1

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    started = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    elapsed = time.perf_counter() - started
    for exporter in exporters:
        exporter.shutdown()
    return elapsed, sum(failures)


def count_rows(database_url: str) -> tuple[int, int, int, dict[str, int]]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            measurements = connection.scalar(text("SELECT count(*) FROM measurements")) or 0
            manifests = connection.scalar(text("SELECT count(*) FROM manifests")) or 0
            reports = connection.scalar(text("SELECT count(*) FROM reports")) or 0
            verdicts = dict(
                connection.execute(
                    text("SELECT verdict, count(*) FROM reports GROUP BY verdict ORDER BY 1")
                ).all()
            )
    finally:
        engine.dispose()
    return measurements, manifests, reports, verdicts


def runs_total(base: str) -> int:
    with urllib.request.urlopen(f"{base}/api/v1/runs?limit=1", timeout=30) as answer:
        total: int = json.load(answer)["total"]
        return total


def bench_one(
    label: str,
    database_url: str,
    spans: Sequence[ReadableSpan],
    batch: int,
    threads: int,
    workdir: Path,
) -> Result:
    batches = [spans[i : i + batch] for i in range(0, len(spans), batch)]
    with collector(database_url, workdir / f"serve-{label}.log") as base:
        seconds, failed = feed(f"{base}/v1/traces", batches, threads)
        runs_api = runs_total(base)
    measurements, manifests, reports, verdicts = count_rows(database_url)
    return Result(
        label, len(spans), seconds, failed, measurements, manifests, reports, runs_api, verdicts
    )


def print_table(results: Sequence[Result], batch: int, threads: int) -> None:
    header = (
        "database",
        "spans sent",
        "seconds",
        "spans/s",
        "batch",
        "threads",
        "rows stored (meas+man)",
        "match",
        "runs (API)",
        "reports",
    )
    rows = [header]
    for r in results:
        stored = r.measurements + r.manifests
        rows.append(
            (
                r.database,
                f"{r.spans:,}",
                f"{r.seconds:.2f}",
                f"{r.spans / r.seconds:,.0f}",
                str(batch),
                str(threads),
                f"{stored:,} ({r.measurements:,}+{r.manifests:,})",
                ("yes" if stored == r.spans else "NO")
                + (f", {r.failed_batches} failed exports" if r.failed_batches else ""),
                f"{r.runs_api:,}",
                f"{r.reports:,}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in results:
        mix = ", ".join(f"{verdict} {count}" for verdict, count in r.verdicts.items())
        print(f"verdicts ({r.database}): {mix}")
    print("reference numbers from the issue (its author's measurements on this machine):")
    for what, number in REFERENCES:
        print(f"  {what}: {number}")


def _stop(signum: int, _frame: object) -> None:
    # Unwind through the ``finally`` blocks: stop the collector, drop the temp database.
    raise SystemExit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spans", type=int, default=20_000, help="spans per database (whole runs)")
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--threads", type=int, default=2, help="client threads exporting")
    parser.add_argument(
        "--databases", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql"
    )
    parser.add_argument(
        "--pg-admin-url",
        default=os.environ.get("CTXLEDGER_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN_URL),
        help="libpq URL of a database to connect to while creating/dropping the temp database",
    )
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"{SPANS_PER_RUN} spans per run ({STEPS * CALLS_PER_STEP} tool calls x 4 stages "
        f"+ {STEPS + 1} manifests)"
    )
    started = time.perf_counter()
    spans = build_spans(args.spans)
    print(f"built {len(spans):,} spans in {time.perf_counter() - started:.1f} s (not timed)")

    results: list[Result] = []
    workdir = Path(tempfile.mkdtemp(prefix="ctxledger-ingest-bench-"))
    try:
        for label in (d.strip() for d in args.databases.split(",") if d.strip()):
            if label == "sqlite":
                database = sqlite_database(workdir)
            elif label == "postgresql":
                database = postgres_database(args.pg_admin_url)
            else:
                parser.error(f"unknown database {label!r}")
            with database as url:
                results.append(bench_one(label, url, spans, args.batch, args.threads, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(results, args.batch, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
