"""The on-disk spool through real collector outages: what the collector could not take is
kept on disk and arrives when it is back, in this process or the next one. Every test
compares span id sets: sent = received ∪ counted as dropped."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ctxledger
from ctxledger import semconv as sc
from tests.e2e.spool_child import measure_journeys

from .helpers import REPO_ROOT, subprocess_env, wait_for
from .otlp_receiver import OTLPReceiver
from .pipeline_kit import (
    free_port,
    install_client,
    recorded_ids,
    spool_files,
    spooled_ids,
    spooled_spans,
)

CHILD = Path(__file__).with_name("spool_child.py")


@pytest.fixture(autouse=True)
def inert_client_afterwards() -> Iterator[None]:
    yield
    ctxledger.configure(service_name="e2e-idle", export=False)


def test_an_outage_lands_in_the_spool_and_arrives_when_the_collector_is_back(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    receiver = OTLPReceiver().start()
    port = receiver.port
    client, recorded = install_client(receiver.url, spool)
    receiver.stop()  # the collector goes down: connections are refused

    measure_journeys(40)
    assert client.recorder.flush(30)
    measured = recorded_ids(recorded)
    assert len(measured) == 40 * 5 + 1  # four stages and a manifest each, and the run
    wait_for(
        lambda: (s := ctxledger.stats()).spans_spooled == s.spool_spans == len(measured),
        what="every span in the spool, and the stats saying so",
    )
    assert spool_files(spool)
    assert sorted(spooled_ids(spool)) == sorted(measured)
    assert ctxledger.stats().spans_exported == 0

    with OTLPReceiver(port=port) as back:  # the collector is back on its address
        assert ctxledger.flush(timeout_s=30)
        received = [s.span_id for s in back.spans]
        assert sorted(received) == sorted(measured)  # each exactly once
        assert spool_files(spool) == []
        stats = ctxledger.stats()
        assert stats.spans_exported == len(measured)
        assert stats.dropped == 0
        ctxledger.configure(service_name="e2e-idle", export=False)


def _run_child(*args: str, spool: Path, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, str(CHILD), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=subprocess_env(CTXLEDGER_SPOOL_DIR=str(spool), **env),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_a_new_process_sends_what_an_exited_one_left_in_the_spool(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    port = free_port()
    dead = f"http://127.0.0.1:{port}"
    measured = json.loads(_run_child("measure", dead, "30", spool=spool))
    assert len(measured) == 30 * 5 + 1
    assert sorted(spooled_ids(spool)) == sorted(measured)  # all of it survived the exit

    with OTLPReceiver(port=port) as receiver:  # the collector it was meant for is back
        stats = json.loads(_run_child("send", receiver.url, spool=spool))
        assert stats["flushed"] is True
        assert sorted(s.span_id for s in receiver.spans) == sorted(measured)
        assert {s.resource[sc.SERVICE_NAME] for s in receiver.spans} == {"spool-child"}
    assert stats["spans_exported"] == len(measured)
    assert spool_files(spool) == []


def test_processes_sharing_a_spool_never_send_a_batch_twice(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    port = free_port()
    dead = f"http://127.0.0.1:{port}"
    measured: list[str] = []
    for _ in range(2):  # two exited processes left 62 batches of 5 spans (or fewer)
        measured += json.loads(
            _run_child("measure", dead, "30", spool=spool, SPOOL_CHILD_BATCH="5")
        )
    files = len(spool_files(spool))
    assert files >= 2 * 151 // 5

    go = tmp_path / "go"
    env = subprocess_env(CTXLEDGER_SPOOL_DIR=str(spool), SPOOL_CHILD_GO=str(go))
    with OTLPReceiver(port=port) as receiver:
        receiver.delay(0.02)  # each answer takes a moment: the senders overlap
        senders = [
            subprocess.Popen(
                [sys.executable, str(CHILD), "send", receiver.url],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO_ROOT,
                env=env,
            )
            for _ in range(2)
        ]
        try:
            for sender in senders:
                assert sender.stdout is not None
                assert sender.stdout.readline().strip() == "ready"
            go.touch()
            outputs = [sender.communicate(timeout=120) for sender in senders]
        finally:
            for sender in senders:
                sender.kill()
        for sender, (out, err) in zip(senders, outputs, strict=True):
            assert sender.returncode == 0, out + err
        results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
        received = [s.span_id for s in receiver.spans]
        assert sorted(received) == sorted(measured)  # every span once: no file sent twice
        assert len([r for r in receiver.requests if r.status == 200]) == files
        print("spans sent by each process:", [r["spans_exported"] for r in results])
    assert sum(r["spans_exported"] for r in results) == len(measured)
    assert spool_files(spool) == []


def test_a_full_spool_drops_the_oldest_counts_them_and_reports_the_drop(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    port = free_port()
    client, recorded = install_client(
        f"http://127.0.0.1:{port}", spool, spool_max_bytes=24_000, export_batch=10
    )
    for i in range(200):  # no run: every span is one measurement
        ctxledger.measure(sc.STAGE_ORIGINAL, f"result {i} " * 20, tool_call_id=f"call_{i:03d}")
    assert client.recorder.flush(30)
    wait_for(
        lambda: ctxledger.stats().spans_spooled >= len(recorded.get_finished_spans()),
        what="every span written to the spool once",
    )
    stats = ctxledger.stats()
    assert stats.spool_dropped > 0
    assert stats.spans_dropped == stats.queue_dropped == 0
    assert sum(f.stat().st_size for f in spool_files(spool)) <= 24_000
    # What the spool still holds is the newest measurements; what it dropped, the oldest.
    measurements = [s for s in recorded.get_finished_spans() if s.name != sc.SPAN_SDK_DROPS]
    order = [format(s.get_span_context().span_id, "016x") for s in measurements]
    kept_on_disk = [i for i, name in spooled_spans(spool) if name != sc.SPAN_SDK_DROPS]
    assert 0 < len(kept_on_disk) < len(order)
    assert kept_on_disk == order[len(order) - len(kept_on_disk) :]

    with OTLPReceiver(port=port) as receiver:
        assert ctxledger.flush(timeout_s=30)
        ctxledger.configure(service_name="e2e-idle", export=False)  # the final drop report
        final = client.stats()
        order = recorded_ids(recorded)
        received = [s.span_id for s in receiver.spans]
        dropped = order[: final.spool_dropped]
        assert sorted(received) == sorted(order[final.spool_dropped :])
        assert set(received).isdisjoint(dropped)
        reports = [s for s in receiver.spans if s.name == sc.SPAN_SDK_DROPS]
    assert reports, "the drop was reported to the collector"
    last = max(reports, key=lambda s: s.end_time_unix_nano)
    assert last.attributes[sc.SDK_DROPS_SPOOL] == final.spool_dropped
    assert last.attributes[sc.SDK_DROPPED_SPANS] == final.dropped
    assert sc.STAGE not in last.attributes and sc.REQUEST_ID not in last.attributes
    assert last.resource[sc.HOST_NAME] == socket.gethostname()
    assert last.resource[sc.SERVICE_INSTANCE_ID]
    assert last.resource[sc.SERVICE_NAME] == "pipeline-agent"


def test_a_spool_that_cannot_be_written_keeps_batches_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    port = free_port()
    client, recorded = install_client(f"http://127.0.0.1:{port}", blocker / "spool")
    for i in range(20):
        ctxledger.measure(sc.STAGE_ORIGINAL, f"result {i}", tool_call_id=f"call_{i}")
    assert client.recorder.flush(30)
    wait_for(lambda: ctxledger.stats().export_failures >= 1, what="a refused export")
    assert ctxledger.stats().spans_spooled == 0
    with OTLPReceiver(port=port) as receiver:
        assert ctxledger.flush(timeout_s=30)
        assert sorted(s.span_id for s in receiver.spans) == sorted(recorded_ids(recorded))
        ctxledger.configure(service_name="e2e-idle", export=False)
    assert client.stats().dropped == 0


def test_the_spool_folder_is_only_created_when_something_waits(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    with OTLPReceiver() as receiver:
        install_client(receiver.url, spool)
        ctxledger.measure(sc.STAGE_ORIGINAL, "result", tool_call_id="call_1")
        assert ctxledger.flush(timeout_s=30)
        assert len(receiver.spans) == 1
        ctxledger.configure(service_name="e2e-idle", export=False)
    assert not spool.exists()


def test_a_batch_still_in_flight_when_shutdown_gives_up_is_kept_in_the_spool(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    with OTLPReceiver() as receiver:
        client, recorded = install_client(receiver.url, spool)
        receiver.delay(2.0)  # the collector hangs longer than the shutdown budget
        ctxledger.measure(sc.STAGE_ORIGINAL, "result", tool_call_id="call_1")
        assert client.recorder.flush(30)
        client.shutdown(timeout_s=0.3)
        measured = recorded_ids(recorded)
        # It may yet arrive: then the collector gets it twice, a duplicate but never a loss.
        assert spooled_ids(spool) == measured
        receiver.delay(0.0)
        install_client(receiver.url, spool)  # the next process (or client) sends it
        assert ctxledger.flush(timeout_s=30)
        assert {s.span_id for s in receiver.spans} == set(measured)
        assert spool_files(spool) == []
        ctxledger.configure(service_name="e2e-idle", export=False)
