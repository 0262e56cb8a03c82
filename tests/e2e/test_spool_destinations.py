"""Parked spans reach only the collector they were meant for: two real collectors
(`ctxledger serve` processes, SQLite files of their own), agents of one service name in
processes of their own, the SDK's default spool folder. Span id sets, not counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.spool_child import SERVICE
from tests.reliability.kit import ServeProcess, stored_span_ids, wait_until

from .helpers import REPO_ROOT, subprocess_env
from .pipeline_kit import free_port, spooled_ids

CHILD = Path(__file__).with_name("spool_child.py")


def _child(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(CHILD), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=subprocess_env(XDG_CACHE_HOME=str(cache)),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _measured(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The span ids the child ended: 10 journeys of 4 stages and a manifest, and the run's
    own span (which the collector does not store as a journey's)."""
    ids = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert len(ids) == 10 * 5 + 1
    return ids


def _all_stored(database_url: str, sent: set[str]) -> bool:
    """Whether the collector holds the 50 journey spans of ``sent`` (and nothing else)."""
    stored = stored_span_ids(database_url)
    assert stored <= sent, f"{len(stored - sent)} spans stored that were not sent here"
    return len(stored) == 10 * 5


def _ctxledger(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=subprocess_env(XDG_CACHE_HOME=str(cache)),
        check=False,
    )


def test_spans_parked_for_one_collector_never_reach_another(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    spool_root = cache / "ctxledger" / "spool"
    port_a = free_port()
    url_a = f"http://127.0.0.1:{port_a}"
    first = _child(cache, "measure", url_a, "10")  # collector A is down
    parked_for_a = _measured(first)
    assert parked_for_a == set(spooled_ids(spool_root))
    assert f"parked in {spool_root / SERVICE}" in first.stderr
    assert f"{url_a}/v1/traces" in first.stderr
    listed = _ctxledger(cache, "spool", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"51 spans parked in 1 folders under {spool_root}" in listed.stdout
    assert f"{url_a}/v1/traces" in listed.stdout

    database_b = f"sqlite:///{tmp_path / 'b.db'}"
    collector_b = ServeProcess({"CTXLEDGER_DATABASE_URL": database_b}, tmp_path / "b.log")
    collector_b.start()
    try:
        sent_to_b = _measured(_child(cache, "measure", collector_b.url, "10"))
        sender = json.loads(_child(cache, "send", collector_b.url).stdout.splitlines()[-1])
        assert sender["flushed"] is True
        wait_until(lambda: _all_stored(database_b, sent_to_b), 60, "B's own spans")
    finally:
        collector_b.stop()
    assert stored_span_ids(database_b).isdisjoint(parked_for_a)
    assert parked_for_a == set(spooled_ids(spool_root))  # all still waiting for A

    database_a = f"sqlite:///{tmp_path / 'a.db'}"
    collector_a = ServeProcess({"CTXLEDGER_DATABASE_URL": database_a}, tmp_path / "a.log", port_a)
    collector_a.start()
    try:
        sender = json.loads(_child(cache, "send", url_a).stdout.splitlines()[-1])
        assert sender["flushed"] is True
        wait_until(lambda: _all_stored(database_a, parked_for_a), 60, "A's parked spans")
    finally:
        collector_a.stop()
    assert spooled_ids(spool_root) == []
    assert "0 spans parked in 0 folders" in _ctxledger(cache, "spool", "list").stdout


def test_spool_drop_discards_what_waits_for_one_endpoint_only(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    spool_root = cache / "ctxledger" / "spool"
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    kept = _measured(_child(cache, "measure", dead[0], "10"))
    _measured(_child(cache, "measure", dead[1], "10"))

    dropped = _ctxledger(cache, "spool", "drop", "--endpoint", dead[1])
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.startswith("dropped 51 spans (") and f"{dead[1]}/v1/traces" in (
        dropped.stdout
    )
    assert set(spooled_ids(spool_root)) == kept

    again = _ctxledger(cache, "spool", "drop", "--endpoint", dead[1])
    assert again.returncode == 1
    assert again.stderr.strip() == f"ctxledger spool: nothing is parked for {dead[1]}/v1/traces"
    assert _ctxledger(cache, "spool", "drop", "--all").returncode == 0
    assert spooled_ids(spool_root) == []
