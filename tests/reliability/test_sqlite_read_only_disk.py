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

from tests.reliability.kit import Load, ServeProcess, make_batch, stored_span_ids, wait_until


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
def switchable_disk(tmp_path: Path) -> Iterator[SwitchableDisk]:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: the kernel offers no FUSE to make a read-only disk")
    backing, mountpoint = tmp_path / "backing", tmp_path / "disk"
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
    if shutil.which("umount") is None:
        pytest.skip("umount is missing")
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
            assert recovery_s < 10, f"writes resumed only after {recovery_s:.1f} s"
            load.wait_for_exports(load.exports + 4)
        finally:
            load.stop()
            collector.stop()
        stored = stored_span_ids(database_url)
    assert load.acked | probes <= stored, "an acknowledged span is missing"
    assert stored <= load.sent | probes
