"""Alerting end to end: the demo incidents, measured by the SDK and exported over real
OTLP/HTTP to a real collector (SQLite file and PostgreSQL), become signed notifications
at real webhook receivers on loopback (``alert_receivers``).

Covered: one notification per (rule, agent, tool) group with its count and worst
examples; duplicates create nothing; a group's window holds new matches back; quiet
groups resolve; retries keep the webhook-id; dead letters; a slow sink never slows
ingest; a collector killed mid-delivery loses nothing; two collectors on one database
notify each group once and keep its window; a removed sink's notifications die; an
invalid rules file stops ``ctxledger serve``; metrics and the label cap. Two strict
xfails pin bugs: alerts depend on the order in which a journey's spans arrive.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli import demo
from ctxledger_collector.ops.settings import Settings
from tests.collector.alert_receivers import (
    FailingReceiver,
    Received,
    Receiver,
    SlowReceiver,
)
from tests.collector.live_collector import LiveCollector, free_port
from tests.collector.otlp_post import post_otlp

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_YWxlcnRzLXRlc3Qtc2lnbmluZy1rZXktMDAx"
RULE = "silent-dropped-orphaned"


def expected_call(incident: str, verdict: str) -> str:
    """The call of ``incident`` the demo expects to get ``verdict``."""
    (call_id,) = [c for c, v in demo.EXPECTED_VERDICTS[incident].items() if v == verdict]
    return call_id


SEARCH_CALL = expected_call("seed_004_silent_loss", "silent")
DROP_CALL = expected_call("dropped_result", "dropped")
ORPHAN_CALL = expected_call("orphaned_call", "orphaned")
TRIMMED_CALL = expected_call("orphaned_call", "dropped")
NAIVE_TRIM_CALL = expected_call("seed_001_naive_trim", "orphaned")
WINDOW_CALL = expected_call("ollama_window", "dropped")

Group = tuple[str, str | None, str | None]
KB: Group = (RULE, "kb-agent", "search_knowledge")
#: The demo's groups under ``silent-dropped-orphaned``: (verdict, tool call, journeys in the group).
GROUPS: dict[Group, tuple[str, str, int]] = {
    # One search result cut at step 2 and re-sent cut at step 3: one lost result, one event.
    KB: ("silent", SEARCH_CALL, 1),
    (RULE, "ticket-agent", "export_tickets"): ("dropped", DROP_CALL, 1),
    # LangGraph's trim_messages(strategy="last"): a result without its call, one gone.
    (RULE, "langgraph-trim-agent", "get_customer"): ("orphaned", ORPHAN_CALL, 1),
    (RULE, "langgraph-trim-agent", "search_orders"): ("dropped", TRIMMED_CALL, 1),
    # Seed 001's naive trim: the log call kept, its result deleted.
    (RULE, "sre-agent", "grep_logs"): ("orphaned", NAIVE_TRIM_CALL, 1),
    # The request left whole; the model server discarded the orders at its window.
    (RULE, "ollama-window-agent", "query_orders"): ("dropped", WINDOW_CALL, 1),
}

T = TypeVar("T")


# --- rules, settings, the SDK -----------------------------------------------------------


def webhook(name: str, receiver: Receiver, timeout_s: float = 10.0) -> dict[str, Any]:
    return {
        "type": "webhook",
        "name": name,
        "url": receiver.url,
        "secrets": [SECRET],
        "timeout_s": timeout_s,
        "allow_loopback": True,  # the receivers listen on this machine's loopback
    }


def write_rules(
    path: Path, sinks: Sequence[dict[str, Any]], rule: dict[str, Any] | None = None, **tuning: Any
) -> Path:
    """A rules file alerting on silent, dropped and orphaned journeys (``rule`` adds keys)."""
    document = {
        **tuning,
        "rules": [
            {
                "name": RULE,
                "verdicts": ["silent", "dropped", "orphaned"],
                "severity": "critical",
                **(rule or {}),
            }
        ],
        "sinks": list(sinks),
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def settings_for(database_url: str, rules: Path, **extra: Any) -> Settings:
    return Settings(
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=3600.0,
        alerts_file=str(rules),
        alert_tick_s=0.1,
        alert_retry_base_s=0.2,
        **{"alert_settle_s": 0.5, **extra},  # stages within the settle time correct events
    )


class RecordingExporter(OTLPSpanExporter):
    """The real OTLP/HTTP exporter; remembers what each export returned."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(endpoint=endpoint, timeout=30)
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)
        self.results.append(result)
        return result


@contextlib.contextmanager
def sdk_exporting_to(url: str | None) -> Iterator[Callable[[], list[ReadableSpan]]]:
    """ctxledger measuring into an OTel provider that exports OTLP/HTTP to ``url`` (none
    when None) in one batch per flush, and keeps a copy of every span. Yields ``flush``:
    export everything measured so far (asserting the collector took it) and return all
    the spans measured since the start."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "alerts-test"}))
    otlp = RecordingExporter(f"{url}/v1/traces") if url else None
    if otlp is not None:
        # One export per flush: the timer never splits a run across two requests.
        provider.add_span_processor(
            BatchSpanProcessor(
                otlp,
                max_queue_size=65_536,
                max_export_batch_size=65_536,
                schedule_delay_millis=600_000,
            )
        )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    client = ctxledger.configure(service_name="alerts-test", tracer_provider=provider, ledger="off")

    def flush() -> list[ReadableSpan]:
        assert ctxledger.flush()
        assert provider.force_flush(30_000)
        if otlp is not None:
            assert otlp.results, "nothing was exported"
            assert set(otlp.results) == {SpanExportResult.SUCCESS}, otlp.results
        return list(memory.get_finished_spans())

    try:
        yield flush
    finally:
        client.shutdown()
        ctxledger.configure(service_name="idle", export=False, ledger="off")
        provider.shutdown()


def post_spans(http: httpx.Client, url: str, spans: Sequence[ReadableSpan]) -> None:
    """POST spans as one OTLP/protobuf body (what the OTLP exporter sends)."""
    response = post_otlp(http, url, encode_spans(spans).SerializeToString())
    assert response.status_code == 200, response.text
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    assert answer.partial_success.rejected_spans == 0, answer


def measured(*incidents: Callable[[], object]) -> list[ReadableSpan]:
    """The spans the SDK measures for the incidents, kept in memory (not exported)."""
    with sdk_exporting_to(None) as flush:
        for incident in incidents:
            incident()
        return flush()


# --- the collector's answers ------------------------------------------------------------


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    timeout_s: float = 30.0,
    seen: Callable[[], object] | None = None,
) -> T:
    """``condition()`` once it is truthy; on timeout, the error says what ``seen()`` (when
    given) last returned, so a wait that overshoots is told from one that never got there."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            last = f"; last seen: {seen()!r}" if seen is not None else ""
            raise AssertionError(f"timed out waiting for {what}{last}")
        time.sleep(0.05)


def alerts(url: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/api/v1/alerts", params={"limit": 500}, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["next_offset"] is None
    return body


def group_of(notification: dict[str, Any]) -> Group:
    return notification["rule"], notification["agent"], notification["tool"]


def notifications(url: str, status: str | None = None) -> list[dict[str, Any]]:
    found = alerts(url)["notifications"]
    return [n for n in found if status is None or n["status"] == status]


def all_delivered(url: str, expected: int) -> list[dict[str, Any]] | None:
    found = notifications(url)
    if len(found) == expected and all(n["delivery"] == "delivered" for n in found):
        return found
    return None


def reports(url: str, **params: Any) -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/api/v1/reports", params={**params, "limit": 1000}, timeout=30)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["reports"]
    return found


def metric_samples(url: str, name: str) -> list[tuple[dict[str, str], float]]:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return [
        (dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]


def metric(url: str, name: str, **labels: str) -> float | None:
    values = [v for found, v in metric_samples(url, name) if found == labels]
    assert len(values) <= 1, values
    return values[0] if values else None


def with_status(requests: list[Received], status: str) -> list[Received]:
    return [r for r in requests if r.payload is not None and r.payload["status"] == status]


def assert_verified(requests: list[Received]) -> None:
    assert requests
    for request in requests:
        assert request.error is None, request.error
        assert request.webhook_id and request.webhook_id.startswith("msg_")


# --- 1. the seeds become one notification per group -------------------------------------

WINDOW_S = 3.0
# Longer than the steps between the first firing and the held-back event take on a
# starved machine: a group quiet this long resolves, and its next event fires it anew.
RESOLVE_S = 8.0


def test_seeds_notify_each_group_once_hold_back_then_resolve(
    database_url: str, tmp_path: Path
) -> None:
    dashboard = "https://dash.example.test/ctxledger/"
    with Receiver([SECRET]) as receiver:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", receiver)],
            group_window_s=WINDOW_S,
            resolve_after_s=RESOLVE_S,
        )
        settings = settings_for(database_url, rules, dashboard_url=dashboard)
        with LiveCollector(settings) as collector, sdk_exporting_to(collector.url) as flush:
            url = collector.url
            demo.run_all_incidents()
            first_spans = flush()

            # One firing notification per group, signed, the count and the worst examples.
            firing = receiver.wait_for(lambda rs: len(with_status(rs, "firing")) >= len(GROUPS))
            firing = with_status(firing, "firing")
            assert_verified(firing)
            assert sorted(r.group for r in firing) == sorted(GROUPS)
            outbox = wait_until(
                lambda: all_delivered(url, len(GROUPS)), "a delivered notification per group"
            )
            by_id = {n["webhook_id"]: n for n in outbox}
            for request in firing:
                payload = request.payload
                verdict, call_id, count = GROUPS[request.group]
                (trace_id,) = {r["trace_id"] for r in reports(url, tool_call_id=call_id)}
                # The webhook-id header is the notification's, the body is its payload.
                notification = by_id[request.webhook_id]
                assert group_of(notification) == request.group
                assert notification["payload"] == payload
                assert notification["status"] == "firing"
                assert (notification["sink"], notification["attempts"]) == ("ops", 1)
                assert payload["type"] == "ctxledger.alert"
                assert (payload["status"], payload["rule"], payload["severity"]) == (
                    "firing",
                    RULE,
                    "critical",
                )
                assert payload["count"] == count
                assert len(payload["examples"]) == count
                for example in payload["examples"]:
                    assert (example["verdict"], example["tool_call_id"]) == (verdict, call_id)
                    assert example["trace_id"] == trace_id
                    assert example["links"]["run"] == f"/api/v1/runs/{trace_id}"
                    assert example["links"]["dashboard"] == (
                        f"{dashboard.rstrip('/')}/run?trace_id={trace_id}"
                        f"&step={example['step']}&tool_call_id={call_id}"
                    )
                assert payload["lost_items"] == sum(e["lost_items"] for e in payload["examples"])
            (kb,) = [r.payload for r in firing if r.group == KB]
            # The example is the journey where the result was first lost, not the re-send.
            assert {e["request_id"] for e in kb["examples"]} == {
                r["request_id"] for r in reports(url, tool_call_id=SEARCH_CALL) if r["first_lost"]
            }
            assert [e["lost_items"] for e in kb["examples"]] == [30]
            first_kb = next(n for n in outbox if group_of(n) == KB)

            # The same journeys again (every span duplicated): no new event, no notification.
            groups_before = alerts(url)["groups"]
            with httpx.Client(timeout=60) as http:
                post_spans(http, url, first_spans)
            after = alerts(url)
            assert after["total"] == len(GROUPS)
            assert after["groups"] == groups_before

            # A new silent journey in the kb group, inside the window: held back.
            demo.run_seed_004()
            second_spans = flush()
            new_traces = {s.context.trace_id for s in second_spans} - {
                s.context.trace_id for s in first_spans
            }
            assert len(new_traces) == 1
            seen = alerts(url)
            if time.time() < first_kb["created_at"] + WINDOW_S:  # read inside the window
                assert seen["total"] == len(GROUPS), "a new match notified inside the window"
                (kb_group,) = [g for g in seen["groups"] if (RULE, g["agent"], g["tool"]) == KB]
                assert kb_group["last_notified_at"] == first_kb["created_at"]
                assert kb_group["last_event_at"] > first_kb["created_at"]

            # ... and sent in the next notification once the window has passed.
            requests = receiver.wait_for(
                lambda rs: len([r for r in with_status(rs, "firing") if r.group == KB]) == 2
            )
            second = [r for r in with_status(requests, "firing") if r.group == KB][1]
            assert_verified([second])
            new_trace = f"{next(iter(new_traces)):032x}"
            assert second.payload["count"] == 1  # the new run's one lost result
            assert {e["trace_id"] for e in second.payload["examples"]} == {new_trace}
            assert {e["verdict"] for e in second.payload["examples"]} == {"silent"}
            assert second.payload["window"]["start"] == first_kb["created_at"]
            second_row = next(n for n in notifications(url) if n["webhook_id"] == second.webhook_id)
            assert second_row["created_at"] >= first_kb["created_at"] + WINDOW_S

            # Quiet for resolve_after_s: one "resolved" per group, after its last firing.
            requests = receiver.wait_for(lambda rs: len(with_status(rs, "resolved")) >= len(GROUPS))
            resolved = with_status(requests, "resolved")
            assert_verified(resolved)
            assert sorted(r.group for r in resolved) == sorted(GROUPS)
            for request in resolved:
                assert request.payload["count"] == 0 and request.payload["examples"] == []
                last_firing = max(
                    r.index for r in with_status(requests, "firing") if r.group == request.group
                )
                assert request.index > last_firing
            total = 2 * len(GROUPS) + 1
            final = wait_until(lambda: all_delivered(url, total), f"{total} deliveries")
            assert {g["state"] for g in alerts(url)["groups"]} == {"resolved"}
            # Exactly: one firing per group, the held-back kb batch, one resolved per group;
            # no duplicates.
            assert len(final) == total
            assert sorted(r.webhook_id for r in receiver.requests) == sorted(
                n["webhook_id"] for n in final
            )

            # A resolved group's next event fires it again, once it has settled.
            demo.run_seed_004()
            flush()
            newest = max(f["id"] for f in final)
            (again,) = wait_until(
                lambda: [n for n in notifications(url) if n["id"] > newest],
                "the resolved group firing again",
            )
            assert (group_of(again), again["status"], again["payload"]["count"]) == (
                KB,
                "firing",
                1,
            )
            receiver.wait_for(lambda rs: again["webhook_id"] in {r.webhook_id for r in rs})


# --- 2. retries keep the webhook-id; dead letters ---------------------------------------


def test_a_failing_receiver_gets_the_same_webhook_id_until_it_accepts(
    database_url: str, tmp_path: Path
) -> None:
    with FailingReceiver([SECRET], failures=2) as receiver:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", receiver)],
            rule={"tools": ["search_knowledge"]},
        )
        with LiveCollector(settings_for(database_url, rules)) as collector:
            with sdk_exporting_to(collector.url) as flush:
                demo.run_seed_004()
                flush()
            url = collector.url
            (delivered,) = wait_until(lambda: all_delivered(url, 1), "the delivery")
            requests = receiver.requests
            assert [r.status for r in requests] == [500, 500, 204]
            assert_verified(requests)
            assert {r.webhook_id for r in requests} == {delivered["webhook_id"]}
            assert {r.group for r in requests} == {KB}
            assert all(r.payload == delivered["payload"] for r in requests)
            assert delivered["attempts"] == 3
            assert delivered["last_error"] is None and delivered["delivered_at"] is not None
            name = "ctxledger_alert_deliveries_total"
            assert metric(url, name, sink="ops", outcome="failed") == 2
            assert metric(url, name, sink="ops", outcome="delivered") == 1
            assert metric(url, name, sink="ops", outcome="dead") is None


def test_a_notification_is_dead_after_max_attempts(database_url: str, tmp_path: Path) -> None:
    with FailingReceiver([SECRET], failures=None) as receiver:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", receiver)],
            rule={"tools": ["search_knowledge"]},
            max_attempts=2,
        )
        with LiveCollector(settings_for(database_url, rules)) as collector:
            with sdk_exporting_to(collector.url) as flush:
                demo.run_seed_004()
                flush()
            url = collector.url
            (dead,) = wait_until(
                lambda: [n for n in notifications(url) if n["delivery"] == "dead"] or None,
                "a dead notification",
            )
            assert dead["attempts"] == 2
            assert dead["last_error"].startswith("HTTP 500")
            assert dead["delivered_at"] is None and dead["next_attempt_at"] is None
            requests = receiver.requests
            assert [r.status for r in requests] == [500, 500]
            assert {r.webhook_id for r in requests} == {dead["webhook_id"]}
            name = "ctxledger_alert_deliveries_total"
            assert metric(url, name, sink="ops", outcome="failed") == 1
            assert metric(url, name, sink="ops", outcome="dead") == 1
            assert metric(url, name, sink="ops", outcome="delivered") is None
            assert alerts(url)["total"] == 1


def test_a_sink_removed_from_the_rules_makes_its_pending_notifications_dead(
    database_url: str, tmp_path: Path
) -> None:
    with FailingReceiver([SECRET], failures=None) as failing, Receiver([SECRET]) as healthy:
        rules = tmp_path / "alerts.yaml"
        write_rules(rules, [webhook("ops", failing)], rule={"tools": ["search_knowledge"]})
        with LiveCollector(settings_for(database_url, rules)) as collector:
            with sdk_exporting_to(collector.url) as flush:
                demo.run_seed_004()
                flush()
            failing.wait_for(lambda rs: len(rs) >= 1)
        tried = len(failing.requests)

        # Restarted with the sink replaced: what was pending for it is dead at once.
        write_rules(rules, [webhook("team", healthy)], rule={"tools": ["search_knowledge"]})
        with LiveCollector(settings_for(database_url, rules)) as collector:
            url = collector.url
            (dead,) = wait_until(
                lambda: [n for n in notifications(url) if n["delivery"] == "dead"] or None,
                "the orphaned notification to be dead",
            )
            assert dead["sink"] == "ops"
            assert dead["last_error"] == "sink 'ops' is no longer configured"
            assert len(failing.requests) == tried
            assert metric(url, "ctxledger_alert_deliveries_total", sink="ops", outcome="dead") == 1
            assert healthy.requests == []


# --- 3. a slow sink never slows ingest --------------------------------------------------


def test_a_slow_sink_never_slows_ingest(database_url: str, tmp_path: Path) -> None:
    with SlowReceiver([SECRET], hold_s=5.0) as receiver:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", receiver, timeout_s=3.0)],
            rule={"tools": ["search_knowledge"]},
        )
        with LiveCollector(settings_for(database_url, rules)) as collector:
            url = collector.url
            with sdk_exporting_to(url) as flush:
                demo.run_seed_004()
                flush()
                assert receiver.first_arrived.wait(30), "the delivery never started"

                # While the receiver holds the delivery, ingest answers and judges.
                for _ in range(2):
                    demo.run_seed_004()
                    flush()  # the OTLP exporter's POST was answered with success
                silent = [
                    r for r in reports(url, tool_call_id=SEARCH_CALL) if r["verdict"] == "silent"
                ]
                (in_flight,) = notifications(url)
                assert not receiver.first_answered.is_set()
                assert in_flight["attempts"] == 0 and in_flight["delivery"] == "pending"
            assert len(silent) == 6  # three runs, two silent journeys each

            # The held delivery times out on the collector's side and is retried.
            (delivered,) = wait_until(lambda: all_delivered(url, 1), "the retried delivery")
            assert delivered["attempts"] == 2
            requests = receiver.requests
            assert [r.status for r in requests] == [204, 204]
            assert {r.webhook_id for r in requests} == {delivered["webhook_id"]}
            assert not receiver.first_answered.is_set()  # the first is still held
            name = "ctxledger_alert_deliveries_total"
            assert metric(url, name, sink="ops", outcome="failed") == 1
            assert metric(url, name, sink="ops", outcome="delivered") == 1


# --- real ``ctxledger serve`` processes ---------------------------------------------------


def serve_env(database_url: str, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLEDGER_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / d) for d in ("sdk", "collector", "cli")])
    env["CTXLEDGER_DATABASE_URL"] = database_url
    env["CTXLEDGER_SWEEP_INTERVAL_S"] = "3600"
    env["CTXLEDGER_ALERT_SETTLE_S"] = "0.5"
    env.update({f"CTXLEDGER_{k.upper()}": v for k, v in settings.items()})
    return env


def serve_command(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ctxledger_cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "info",
    ]


@contextlib.contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real ``ctxledger serve`` process, ready; killed afterwards if still running."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("ab") as output:
        process = subprocess.Popen(
            serve_command(port), env=env, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{url} never became ready:\n{log.read_text()}")
            time.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_collector_killed_mid_delivery_loses_nothing(postgres_url: str, tmp_path: Path) -> None:
    with SlowReceiver([SECRET], hold_s=60.0) as receiver:
        rules = write_rules(tmp_path / "alerts.yaml", [webhook("ops", receiver, timeout_s=30)])
        env = serve_env(
            postgres_url,
            alerts_file=str(rules),
            alert_lease_s="2",
            alert_tick_s="0.1",
            alert_retry_base_s="0.2",
            auto_migrate="true",
        )
        log = tmp_path / "serve.log"
        with serving(env, log) as (url, process):
            with sdk_exporting_to(url) as flush:
                demo.run_all_incidents()
                flush()
            assert receiver.first_arrived.wait(30), "the first delivery never started"
            (held,) = receiver.requests
            process.send_signal(signal.SIGKILL)  # mid-delivery: the receiver still holds it
            assert process.wait(timeout=20) == -signal.SIGKILL
        assert not receiver.first_answered.is_set()
        receiver.release()  # the dead collector's request gets its (unread) answer

        with serving(env, log) as (url, _):
            outbox = wait_until(
                lambda: all_delivered(url, len(GROUPS)), "a delivered notification per group", 60
            )
            requests = receiver.requests
            assert_verified(requests)
            ids_by_group: dict[Group | None, set[str | None]] = {}
            for request in requests:
                ids_by_group.setdefault(request.group, set()).add(request.webhook_id)
            assert ids_by_group == {group_of(n): {n["webhook_id"]} for n in outbox}, (
                "not exactly one webhook-id per group"
            )
            assert set(ids_by_group) == set(GROUPS)
            # The held one came again with its id; the other two came once each.
            assert sorted(r.webhook_id for r in requests) == sorted(
                [held.webhook_id, *(n["webhook_id"] for n in outbox)]
            )
            assert [r.payload for r in requests if r.webhook_id == held.webhook_id] == [
                held.payload,
                held.payload,
            ]
            assert len(reports(url, tool_call_id=SEARCH_CALL)) == 2


def traces_of(spans: list[ReadableSpan]) -> list[list[ReadableSpan]]:
    """The spans of each trace, in the order they ended; traces in order of appearance."""
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        traces.setdefault(span.context.trace_id, []).append(span)
    return list(traces.values())


def post_lockstep(
    replicas: tuple[str, str], traces: list[list[ReadableSpan]], rng: random.Random
) -> None:
    """Post the traces in chunks of 3 spans, alternately to both replicas, in lock-step:
    step i posts the i-th chunk of every trace at once, so the traces of one group reach
    the same journeys at the same moment (at different replicas when their start parities
    differ). Each trace's spans arrive in order; then a third of the chunks arrive again,
    at the other replica."""
    steps: list[list[tuple[str, list[ReadableSpan]]]] = []
    for start, spans in enumerate(traces):
        chunks = [spans[i : i + 3] for i in range(0, len(spans), 3)]
        for step, chunk in enumerate(chunks):
            if len(steps) <= step:
                steps.append([])
            steps[step].append((replicas[(start + step) % 2], chunk))
    duplicates = [
        (other, chunk)
        for jobs in steps
        for url, chunk in jobs
        if rng.random() < 1 / 3
        for other in replicas
        if other != url
    ]
    assert duplicates
    with httpx.Client(timeout=60) as http, ThreadPoolExecutor(len(traces)) as pool:
        for jobs in [*steps, duplicates]:
            list(pool.map(lambda job: post_spans(http, *job), jobs))


@contextlib.contextmanager
def two_replicas(postgres_url: str, rules: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    migrate = subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", "db", "upgrade", "--database-url", postgres_url],
        env=serve_env(postgres_url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    env = serve_env(postgres_url, alerts_file=str(rules), alert_tick_s="0.1")
    with (
        serving(env, tmp_path / "first.log") as (first, _),
        serving(env, tmp_path / "second.log") as (second, _),
    ):
        yield first, second


def ids_by_group(requests: list[Received]) -> dict[Group | None, set[str | None]]:
    found: dict[Group | None, set[str | None]] = {}
    for request in requests:
        found.setdefault(request.group, set()).add(request.webhook_id)
    return found


def test_two_collectors_notify_each_group_once(postgres_url: str, tmp_path: Path) -> None:
    # Two runs of every incident: each group gets journeys from two traces at once.
    traces = traces_of(measured(demo.run_all_incidents, demo.run_all_incidents))
    assert len(traces) == 2 * len(demo.INCIDENTS)
    with Receiver([SECRET]) as ops, Receiver([SECRET]) as audit:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", ops), webhook("audit", audit)],
            group_window_s=60,
            resolve_after_s=120,
        )
        with two_replicas(postgres_url, rules, tmp_path) as (first, second):
            post_lockstep((first, second), traces, random.Random(20261130))

            # Once the events have settled, each group is notified (once per sink).
            outbox = wait_until(
                lambda: found if len(found := notifications(first)) >= 2 * len(GROUPS) else None,
                "a notification per group and sink",
            )
            # Both replicas read the same outbox (delivery may progress between reads).
            assert [n["webhook_id"] for n in outbox] == [
                n["webhook_id"] for n in notifications(second)
            ]
            batches: dict[Group, set[str]] = {}
            for notification in outbox:
                assert notification["status"] == "firing"
                batches.setdefault(group_of(notification), set()).add(notification["batch_id"])
            assert {g: len(b) for g, b in batches.items()} == dict.fromkeys(GROUPS, 1)
            assert sorted((group_of(n), n["sink"]) for n in outbox) == sorted(
                (g, sink) for g in GROUPS for sink in ("ops", "audit")
            )

            wait_until(lambda: all_delivered(first, 2 * len(GROUPS)), "every delivery")
            for receiver in (ops, audit):
                requests = receiver.wait_for(lambda rs: len(rs) >= len(GROUPS))
                assert_verified(requests)
                assert {g: len(i) for g, i in ids_by_group(requests).items()} == dict.fromkeys(
                    GROUPS, 1
                )
            assert len(ops.requests) == len(audit.requests) == len(GROUPS)
            assert {r.webhook_id for r in ops.requests + audit.requests} == {
                n["webhook_id"] for n in outbox
            }


def test_two_collectors_keep_each_groups_window(postgres_url: str, tmp_path: Path) -> None:
    # A first run opens every group; once their windows have passed, two more runs arrive
    # at both collectors at once: each group is then notifiable, and exactly one of the
    # collectors may notify it; the other's matches wait for the window.
    window_s = 2.0
    traces = traces_of(measured(*[demo.run_all_incidents] * 3))
    per_run = len(demo.INCIDENTS)
    assert len(traces) == 3 * per_run
    expected = {group: 3 * journeys for group, (_, _, journeys) in GROUPS.items()}

    def counted(url: str) -> dict[Group, int]:
        totals: dict[Group, int] = {}
        for notification in notifications(url, "firing"):
            group = group_of(notification)
            totals[group] = totals.get(group, 0) + notification["payload"]["count"]
        return totals

    with Receiver([SECRET]) as receiver:
        rules = write_rules(
            tmp_path / "alerts.yaml",
            [webhook("ops", receiver)],
            group_window_s=window_s,
            resolve_after_s=120,
        )
        with two_replicas(postgres_url, rules, tmp_path) as (first, second):
            rng = random.Random(7)
            post_lockstep((first, second), traces[:per_run], rng)
            wait_until(
                lambda: counted(first) == {g: j // 3 for g, j in expected.items()},
                "the first run notified",
            )
            wait_until(
                lambda: all(
                    time.time() > g["last_notified_at"] + window_s for g in alerts(first)["groups"]
                ),
                "every group's window to pass",
            )
            post_lockstep((second, first), traces[per_run:], rng)
            wait_until(
                lambda: counted(second) == expected,
                "every match notified",
                60,
                seen=lambda: {"expected": expected, "counted": counted(second)},
            )

            outbox = wait_until(
                lambda: all_delivered(first, len(notifications(first))), "every delivery"
            )
            journeys: list[tuple[str, str, str | None]] = []
            for group in GROUPS:
                firing = sorted(
                    (n for n in outbox if group_of(n) == group and n["status"] == "firing"),
                    key=lambda n: n["created_at"],
                )
                times = [n["created_at"] for n in firing]
                gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
                assert all(gap >= window_s for gap in gaps), (group, gaps)
                journeys += [
                    (e["trace_id"], e["tool_call_id"], e["request_id"])
                    for n in firing
                    for e in n["payload"]["examples"]
                ]
            assert len(journeys) == len(set(journeys)) == sum(expected.values())
            requests = receiver.requests
            assert_verified(requests)
            assert sorted(r.webhook_id for r in requests) == sorted(n["webhook_id"] for n in outbox)


# --- 6. an invalid rules file stops ``ctxledger serve`` -----------------------------------


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "alerts.yaml",
            "rules:\n  - name: lost\n    verdicts: [silent, slient]\nsinks:\n  - type: log\n",
            "alerts.yaml:3: rules[0].verdicts[1]: 'slient' is not a verdict",
        ),
        (
            "alerts.toml",
            '[[rules]]\nname = "lost"\nverdicts = ["silent"]\n\n'
            '[[sinks]]\ntype = "webhook"\nname = "ops"\nurl = "ftp://example.com/x"\n'
            f'secrets = ["{SECRET}"]\n',
            "alerts.toml:8: sinks[0].url: not an http:// or https:// URL",
        ),
    ],
)
def test_serve_refuses_an_invalid_rules_file(
    name: str, text: str, problem: str, tmp_path: Path
) -> None:
    rules = tmp_path / name
    rules.write_text(text, encoding="utf-8")
    database = tmp_path / "ctxledger.db"
    result = subprocess.run(
        serve_command(free_port()),
        env=serve_env(f"sqlite:///{database}", alerts_file=str(rules)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"invalid alert rules in {rules}" in result.stderr
    assert problem in result.stderr, result.stderr
    assert not database.exists()  # it stopped before touching the database


# --- 7. metrics ---------------------------------------------------------------------------


def test_journey_counters_and_the_label_cap(database_url: str, tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "alerts.yaml", [{"type": "log"}], label_cap=2)
    with LiveCollector(settings_for(database_url, rules)) as collector:
        url = collector.url
        with sdk_exporting_to(url) as flush:
            demo.run_seed_004()  # kb-agent first: it keeps its name under the cap
            flush()
            demo.run_all_incidents()
            flush()
        samples = metric_samples(url, "ctxledger_journeys_total")
        assert (
            metric(
                url,
                "ctxledger_journeys_total",
                verdict="silent",
                agent="kb-agent",
                tool="search_knowledge",
            )
            == 4  # two runs of seed 004, two silent journeys each
        )
        agents = {labels["agent"] for labels, _ in samples}
        tools = {labels["tool"] for labels, _ in samples}
        assert "other" in agents and "other" in tools
        assert len(agents - {"other"}) <= 2 and len(tools - {"other"}) <= 2
        # Every journey is counted once, under its own name or "other".
        total_reports = len(reports(url))
        assert sum(v for _, v in samples) == total_reports
        lost = metric_samples(url, "ctxledger_lost_tokens_total")
        assert lost and {labels["agent"] for labels, _ in lost} <= agents


def test_journeys_total_after_the_demo(database_url: str, tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "alerts.yaml", [{"type": "log"}])
    with LiveCollector(settings_for(database_url, rules)) as collector:
        with sdk_exporting_to(collector.url) as flush:
            demo.run_all_incidents()
            flush()
        url = collector.url
        name = "ctxledger_journeys_total"
        assert metric(url, name, verdict="silent", agent="kb-agent", tool="search_knowledge") == 2
        assert (
            metric(url, name, verdict="dropped", agent="ticket-agent", tool="export_tickets") == 1
        )
        agent = "langgraph-trim-agent"
        assert metric(url, name, verdict="orphaned", agent=agent, tool="get_customer") == 1
        assert metric(url, name, verdict="dropped", agent=agent, tool="search_orders") == 1
        assert all(labels["agent"] != "other" for labels, _ in metric_samples(url, name))


def test_the_label_cap_bounds_every_metric(database_url: str, tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "alerts.yaml", [{"type": "log"}], label_cap=2)
    with LiveCollector(settings_for(database_url, rules)) as collector:
        with sdk_exporting_to(collector.url) as flush:
            demo.run_all_incidents()
            flush()
        text = httpx.get(f"{collector.url}/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        agents = {s.labels["agent"] for s in family.samples if "agent" in s.labels}
        tools = {s.labels["tool"] for s in family.samples if "tool" in s.labels}
        assert len(agents - {"other"}) <= 2, (family.name, sorted(agents))
        assert len(tools - {"other"}) <= 2, (family.name, sorted(tools))


# --- arrival order (contract: stages arrive in any order, in any batch) -------------------


#: Long enough for a loaded CI machine to post a whole trace span by span.
SETTLE_S = 5.0


def _trace_of(spans: list[ReadableSpan], agent: str) -> list[ReadableSpan]:
    (trace_id,) = {
        s.context.trace_id
        for s in spans
        if s.name == "ctxledger.run" and (s.attributes or {}).get("gen_ai.agent.name") == agent
    }
    return [s for s in spans if s.context.trace_id == trace_id]


def test_no_alert_for_a_journey_silent_only_until_its_declaring_stage_arrives(
    database_url: str, tmp_path: Path
) -> None:
    spans = _trace_of(measured(demo.INCIDENTS["seed_000_first_rows"]), "orders-agent")
    (declaring,) = [s for s in spans if (s.attributes or {}).get(sc.TRUNCATION_DECLARED)]
    rest = [s for s in spans if s is not declaring]
    rules = write_rules(tmp_path / "alerts.yaml", [{"type": "log"}])
    settings = settings_for(database_url, rules, alert_settle_s=SETTLE_S)
    with LiveCollector(settings) as collector, httpx.Client() as http:
        for span in rest:
            post_spans(http, collector.url, [span])
        post_spans(http, collector.url, [declaring])  # the declared clip arrives last
        call_id = expected_call("seed_000_first_rows", "unmarked")
        assert {r["verdict"] for r in reports(collector.url, tool_call_id=call_id)} == {"unmarked"}
        time.sleep(SETTLE_S + 1.5)  # past the settle time: a kept event would be sent now
        assert notifications(collector.url) == []


def test_an_alert_is_grouped_by_the_journeys_tool_whatever_arrives_first(
    database_url: str, tmp_path: Path
) -> None:
    spans = _trace_of(measured(demo.INCIDENTS["orphaned_call"]), "langgraph-trim-agent")
    (manifest,) = [  # the request carrying the result without its call
        s
        for s in spans
        if ORPHAN_CALL in ((s.attributes or {}).get(sc.REQUEST_TOOL_CALL_IDS) or ())
        and ORPHAN_CALL not in ((s.attributes or {}).get(sc.REQUEST_TOOL_CALLS) or ())
    ]
    rules = write_rules(tmp_path / "alerts.yaml", [{"type": "log"}])
    settings = settings_for(database_url, rules, alert_settle_s=SETTLE_S)
    with LiveCollector(settings) as collector, httpx.Client() as http:
        post_spans(http, collector.url, [manifest])  # the request manifest arrives first
        post_spans(http, collector.url, [s for s in spans if s is not manifest])
        orphaned = [
            r
            for r in reports(collector.url, tool_call_id=ORPHAN_CALL)
            if r["verdict"] == "orphaned"
        ]
        assert [(r["agent_name"], r["tool_name"]) for r in orphaned] == [
            ("langgraph-trim-agent", "get_customer")
        ]
        sent = wait_until(
            lambda: found if len(found := notifications(collector.url)) >= 2 else None,
            "the settled notifications",
        )
        tools = ("get_customer", "search_orders")  # the orphaned result, the dropped one
        expected = [(RULE, "langgraph-trim-agent", tool) for tool in tools]
        assert sorted(group_of(n) for n in sent) == expected
