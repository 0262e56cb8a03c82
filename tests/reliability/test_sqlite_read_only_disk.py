"""A disk that goes read-only under a running `ctxledger serve` on SQLite and comes back:
writes resume within seconds, without a restart, and every acknowledged span is stored.

The disk is a FUSE file system (:mod:`.switchable_fs`) that answers EROFS to writes on
command, with the database and its spool (the default, beside the file) on it. The
stock OTLP exporter sends throughout; while the disk is read-only, queries and health
checks open connections as a dashboard and a load balancer would (a connection opened
then used to leave SQLite's shared WAL index read-only for every later connection).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.reliability.kit import (
    Load,
    ServeProcess,
    make_batch,
    metric,
    stored_span_ids,
    wait_until,
)


class SwitchableDisk:
    """The FUSE process serving ``mountpoint`` from ``backing``."""

    def __init__(self, process: subprocess.Popen[str], mountpoint: Path) -> None:
        self.process = process
        self.mountpoint = mountpoint

    def _command(self, command: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == command

    def read_only(self) -> None:
        self._command("ro")

    def writable(self) -> None:
        self._command("rw")


@contextlib.contextmanager
def switchable_disk(tmp_path: Path, name: str = "disk") -> Iterator[SwitchableDisk]:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: the kernel offers no FUSE to make a read-only disk")
    if shutil.which("umount") is None:
        pytest.skip("umount is missing")
    backing, mountpoint = tmp_path / f"{name}-backing", tmp_path / name
    backing.mkdir()
    mountpoint.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.switchable_fs", str(backing), str(mountpoint)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        first = process.stdout.readline().strip()
        if first != "mounted":
            problem = process.communicate(timeout=30)[1].strip().splitlines()
            pytest.fail(f"the FUSE file system did not mount: {problem[-1:] or first}")
        yield SwitchableDisk(process, mountpoint)
    finally:
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


def _post(url: str, body: bytes) -> int:
    headers = {"content-type": "application/x-protobuf"}
    return httpx.post(url + "/v1/traces", content=body, headers=headers, timeout=30).status_code


def test_writes_resume_within_seconds_after_a_read_only_spell(tmp_path: Path) -> None:
    with switchable_disk(tmp_path) as disk:
        database_url = f"sqlite:///{disk.mountpoint / 'ctxledger.db'}"
        env = {
            "CTXLEDGER_DATABASE_URL": database_url,
            "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
            "CTXLEDGER_READY_CACHE_S": "0",
            "CTXLEDGER_RETRY_AFTER_S": "1",
        }
        collector = ServeProcess(env, tmp_path / "serve.log").start()
        load = Load(collector.url, journeys=5, senders=2, timeout_s=60, pause_s=0.2).start()
        probes: set[str] = set()
        try:
            load.wait_for_exports(4)
            disk.read_only()
            refused = make_batch(2)
            assert _post(collector.url, encode_spans(refused.spans).SerializeToString()) == 503
            spell_ends = time.monotonic() + 4
            while time.monotonic() < spell_ends:  # connections opened during the spell
                httpx.get(collector.url + "/readyz", timeout=30)
                reports = httpx.get(collector.url + "/api/v1/reports", timeout=30)
                assert reports.status_code == 200, reports.text
                time.sleep(0.2)
            assert httpx.get(collector.url + "/readyz", timeout=30).status_code == 503

            disk.writable()
            writable_at = time.monotonic()
            probe = make_batch(1)

            body = encode_spans(probe.spans).SerializeToString()

            def probe_stored() -> bool:
                if not probes and _post(collector.url, body) == 200:
                    probes.update(probe.ids)  # stored, or spooled to be replayed
                time.sleep(0.2)
                return bool(probes) and probe.ids <= stored_span_ids(database_url)

            wait_until(probe_stored, timeout_s=120, what="a write committed after the spell")
            recovery_s = time.monotonic() - writable_at
            print(f"writes committed again {recovery_s:.1f} s after the disk became writable")
            assert recovery_s < 5, f"writes resumed only after {recovery_s:.1f} s"
            load.wait_for_exports(load.exports + 4)
        finally:
            load.stop()
            collector.stop()
        stored = stored_span_ids(database_url)
    assert load.acked | probes <= stored, "an acknowledged span is missing"
    assert stored <= load.sent | probes


def test_the_spool_on_its_own_disk_takes_the_spell_and_drains_while_ingest_goes_on(
    tmp_path: Path,
) -> None:
    """The database's disk goes read-only: exports are spooled on the spool's own disk
    (200). That disk goes read-only too: 503, nothing acknowledged. Both come back: the
    spool drains into the database while the exporter keeps sending."""
    with (
        switchable_disk(tmp_path, "db-disk") as db_disk,
        switchable_disk(tmp_path, "spool-disk") as spool_disk,
    ):
        database_url = f"sqlite:///{db_disk.mountpoint / 'ctxledger.db'}"
        env = {
            "CTXLEDGER_DATABASE_URL": database_url,
            "CTXLEDGER_INGEST_SPOOL_DIR": str(spool_disk.mountpoint / "spool"),
            "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
            "CTXLEDGER_READY_CACHE_S": "0",
            "CTXLEDGER_RETRY_AFTER_S": "1",
        }
        collector = ServeProcess(env, tmp_path / "serve.log").start()
        load = Load(collector.url, journeys=5, senders=2, timeout_s=60, pause_s=0.2).start()
        posted: set[str] = set()

        def post(journeys: int) -> int:
            return answer_past_busy(journeys).status_code

        def answer_past_busy(journeys: int) -> httpx.Response:
            """The answer to an export, sent again (as an exporter does) while it is
            refused as busy: the load's exports may hold every slot as a disk turns
            read-only. Other answers are the test's to check."""
            batch = make_batch(journeys)
            body = encode_spans(batch.spans).SerializeToString()
            deadline = time.monotonic() + 30
            while True:
                answer = httpx.post(
                    collector.url + "/v1/traces",
                    content=body,
                    headers={"content-type": "application/x-protobuf"},
                    timeout=30,
                )
                busy = answer.status_code == 503 and b"ingest is busy" in answer.content
                if not busy or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            if answer.status_code == 200:
                posted.update(batch.ids)
            return answer

        def spooled(outcome: str) -> float:
            return metric(collector.url, "ctxledger_ingest_spooled_total", outcome=outcome)

        try:
            load.wait_for_exports(4)
            db_disk.read_only()
            answer = answer_past_busy(2)
            assert answer.status_code == 200, answer.content  # kept in the spool
            wait_until(lambda: spooled("kept") >= 2, 30, "exports kept in the spool")

            spool_disk.read_only()
            answer = answer_past_busy(2)  # neither disk can take it: the exporter retries
            assert answer.status_code == 503, answer.content
            assert b"the spool cannot be written" in answer.content, answer.content
            assert spooled("failed") >= 1

            spool_disk.writable()
            wait_until(lambda: post(1) == 200, 30, "the spool taking exports again")
            kept = spooled("kept")
            assert metric(collector.url, "ctxledger_ingest_spool_requests") >= 1

            db_disk.writable()
            writable_at = time.monotonic()
            wait_until(
                lambda: metric(collector.url, "ctxledger_ingest_spool_requests") == 0,
                60,
                "the spool drained into the database",
            )
            print(f"spool drained {time.monotonic() - writable_at:.1f} s after the disk came back")
            exports = load.exports
            load.wait_for_exports(exports + 4)  # ingest went on meanwhile and after
            assert spooled("kept") >= kept
        finally:
            load.stop()
            collector.stop()
        stored = stored_span_ids(database_url)
    assert load.acked | posted <= stored, "an acknowledged span is missing"
    assert stored <= load.sent | posted
