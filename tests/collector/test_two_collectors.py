"""Two ``ctxledger serve`` processes share one PostgreSQL database (contract section 4:
"Stages may arrive in any order, in any batch, more than once, at any collector
replica: the verdict depends only on the set of measurements").

The SDK measures a few runs (a silent loss, a declared clip, an orphaned call, a dropped
result, intact journeys) into an in-memory exporter; their spans are encoded one per
OTLP body, shuffled, partly duplicated and posted concurrently, alternately to both
replicas. Whatever either replica then answers must equal what a single fresh collector
on its own database answers after receiving all the spans in one batch.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from tests.collector.conftest import fresh_postgres_database
from tests.collector.journey_counting import assert_counters_match_reports
from tests.collector.live_collector import LiveCollector, free_port
from tests.collector.otlp_post import post_otlp
from tests.collector.test_queries import (
    CONTEXT_WINDOW,
    MODEL,
    _assistant,
    _call,
    _tool,
    seed_run_a,
    seed_run_b,
    seed_run_c,
    send,
    tool_result,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reference_postgres_url() -> Iterator[str]:
    """A second fresh PostgreSQL database, for the single reference collector."""
    with fresh_postgres_database("ctxledger_test_ref") as url:
        yield url


# --- the spans ------------------------------------------------------------------------


def seed_run_d() -> None:
    """Two parallel calls; the next request carries only the small one: ``dropped``."""
    with ctxledger.run("agent-d"):
        question = {"role": "user", "content": "export the queue"}
        send([question])
        tool_result("d-big", "export", [{"id": f"t{i}", "v": "y" * 30} for i in range(30)])
        small = tool_result("d-small", "oncall", {"primary": "li"})
        # A pair-safe context manager removes the big exchange and says nothing.
        send([question, _assistant(_call("d-small", "oncall")), _tool("d-small", small)])


@pytest.fixture(scope="module")
def measured_spans() -> list[ReadableSpan]:
    """The SDK's spans of four runs, as the OTel SDK hands them to an exporter."""
    saved = {
        k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("CTXLEDGER_", "OTEL_"))
    }
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc-replicas"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = ctxledger.configure(
        service_name="svc-replicas",
        tracer_provider=provider,
        ledger="off",
        context_windows={MODEL: CONTEXT_WINDOW},
    )
    try:
        for seed_run in (seed_run_a, seed_run_b, seed_run_c, seed_run_d):
            seed_run()
        assert ctxledger.flush()
        assert client.stats().dropped == 0
    finally:
        client.shutdown()
        ctxledger.configure(service_name="idle", export=False, ledger="off")
        os.environ.update(saved)
    spans = list(exporter.get_finished_spans())
    measurements = [s for s in spans if s.attributes and sc.STAGE in s.attributes]
    assert len(measurements) >= 20 and len({s.context.trace_id for s in measurements}) == 4
    return spans


def body(spans: Sequence[ReadableSpan]) -> bytes:
    encoded: bytes = encode_spans(spans).SerializeToString()
    return encoded


def post(http: httpx.Client, url: str, content: bytes) -> int:
    """POST one OTLP body; returns the number of spans the collector rejected."""
    response = post_otlp(http, url, content)
    assert response.status_code == 200, response.text
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    rejected: int = answer.partial_success.rejected_spans
    return rejected


# --- the collectors -------------------------------------------------------------------


def _env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLEDGER_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / d) for d in ("sdk", "collector", "cli")])
    env["CTXLEDGER_DATABASE_URL"] = database_url
    env["CTXLEDGER_SWEEP_INTERVAL_S"] = "3600"
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctxledger_cli", *args]


@contextlib.contextmanager
def serve(database_url: str, log: Path) -> Iterator[str]:
    """A real ``ctxledger serve`` process on a free port; terminated (SIGTERM) after,
    which it must survive with a graceful shutdown."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            _cli("serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "info"),
            env=_env(database_url),
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            yield url
        finally:
            process.terminate()
            try:
                code = process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise AssertionError(f"{url} did not stop on SIGTERM:\n{log.read_text()}") from None
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal it caught.
    assert code in (0, -signal.SIGTERM), f"ctxledger serve exited with {code}:\n{log.read_text()}"
    assert "Application shutdown complete" in log.read_text(), log.read_text()


def wait_ready(url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return
        time.sleep(0.05)
    raise AssertionError(f"{url} never became ready:\n{log.read_text()}")


# --- comparing answers ----------------------------------------------------------------


def _strip(value: Any) -> Any:
    """The answer without what may differ between collectors: judging time and links."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("judged_at", "links")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def state_of(url: str) -> dict[str, Any]:
    """Every report, every run and every run's detail, as the query API answers them."""
    with httpx.Client(base_url=url, timeout=30) as http:
        reports = http.get("/api/v1/reports", params={"limit": 1000}).json()
        runs = http.get("/api/v1/runs", params={"limit": 1000}).json()
        details = {
            r["trace_id"]: http.get(f"/api/v1/runs/{r['trace_id']}").json() for r in runs["runs"]
        }
        # The aggregates come from the counters every replica moved concurrently.
        aggregates = {
            "timeline": http.get("/api/v1/stats/timeline").json(),
            "by tool": http.get("/api/v1/stats/breakdown", params={"by": "tool"}).json(),
            "by agent": http.get("/api/v1/stats/breakdown", params={"by": "agent"}).json(),
            "journeys gauge": sorted(
                line
                for line in http.get("/metrics").text.splitlines()
                if line.startswith("ctxledger_journeys{")
            ),
        }
    assert reports["next_offset"] is None and runs["next_offset"] is None
    key = ("trace_id", "tool_call_id", "request_id")
    state: dict[str, Any] = _strip(
        {
            "reports": sorted(reports["reports"], key=lambda r: tuple(r[k] or "" for k in key)),
            "runs": sorted(runs["runs"], key=lambda r: r["trace_id"]),
            "details": details,
            "aggregates": aggregates,
        }
    )
    return state


@pytest.mark.parametrize("seed", [7, 2024, 31337])
def test_two_replicas_judge_like_one_collector(
    seed: int,
    measured_spans: list[ReadableSpan],
    postgres_url: str,
    reference_postgres_url: str,
    tmp_path: Path,
) -> None:
    upgrade = subprocess.run(
        _cli("db", "upgrade", "--database-url", postgres_url),
        env=_env(postgres_url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert upgrade.returncode == 0, upgrade.stderr
    assert "is at revision" in upgrade.stdout

    rng = random.Random(seed)
    singles = [body([span]) for span in measured_spans]
    bodies = singles + rng.sample(singles, len(singles) // 3)  # some arrive twice
    rng.shuffle(bodies)

    logs = tmp_path / "replica-1.log", tmp_path / "replica-2.log"
    with serve(postgres_url, logs[0]) as first, serve(postgres_url, logs[1]) as second:
        wait_ready(first, logs[0])
        wait_ready(second, logs[1])
        replicas = (first, second)
        with httpx.Client(timeout=60) as http, ThreadPoolExecutor(max_workers=8) as pool:
            rejected = list(
                pool.map(
                    lambda job: post(http, replicas[job[0] % 2], job[1]),
                    enumerate(bodies),
                )
            )
        assert rejected == [0] * len(bodies)
        seen_by_first, seen_by_second = state_of(first), state_of(second)

    reference_settings = Settings(
        database_url=reference_postgres_url, auto_migrate=True, sweep_interval_s=3600.0
    )
    with LiveCollector(reference_settings) as reference, httpx.Client(timeout=60) as http:
        assert post(http, reference.url, body(measured_spans)) == 0
        expected = state_of(reference.url)

    verdicts = {(r["tool_call_id"], r["verdict"]) for r in expected["reports"]}
    assert {"silent", "declared", "orphaned", "dropped", "intact"} <= {v for _, v in verdicts}
    assert ("d-big", "dropped") in verdicts and ("a-ghost", "orphaned") in verdicts
    assert len(expected["runs"]) == 4
    assert seen_by_first == seen_by_second
    assert seen_by_first == expected
    engine = make_engine(postgres_url)
    try:
        assert_counters_match_reports(engine)
    finally:
        engine.dispose()
