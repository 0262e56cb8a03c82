"""`ctxledger demo --endpoint` where nothing answers: one line naming the URL, at once,
nothing run or parked; and a collector that stops answering while the demo runs: one line
saying how many spans are parked, where, and that they go only there."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.demo.delivery import deliver
from tests.e2e.helpers import REPO_ROOT, subprocess_env
from tests.e2e.pipeline_kit import free_port, spooled_ids


def test_demo_to_a_dead_port_fails_with_one_line_and_parks_nothing(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", "demo", "--endpoint", endpoint],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=subprocess_env(XDG_CACHE_HOME=str(tmp_path)),
        check=False,
    )
    print(f"demo to a dead port: {time.monotonic() - started:.2f} s")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"ctxledger demo: nothing answers at {endpoint} (")
    assert "Connection refused" in lines[0] and "nothing was run or parked" in lines[0]
    assert not (tmp_path / "ctxledger").exists()


def test_a_collector_gone_mid_run_is_given_up_on_and_what_is_parked_is_said(
    tmp_path: Path,
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    client = ctxledger.configure(service_name="demo-t", endpoint=endpoint, spool_dir=tmp_path)
    try:
        for i in range(20):
            ctxledger.measure(sc.STAGE_ORIGINAL, {"rows": [i]}, tool_call_id=f"call_{i}")
        line = deliver(client, endpoint)
        assert line is not None
        parked = client.parked()
        assert parked is not None
        assert parked.spans == len(spooled_ids(tmp_path)) == 20
        assert line.startswith(f"ctxledger demo: {endpoint} did not take the spans (")
        assert "the collector is unreachable" in line
        assert f"20 spans are parked in {parked.folder} and go to {endpoint}/v1/traces" in line
        assert f"`ctxledger spool drop --endpoint {endpoint}`" in line
    finally:
        ctxledger.configure(service_name="idle", export=False)
