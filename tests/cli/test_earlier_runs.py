"""`ctxledger up` on a database that already holds runs says so, with how to start
fresh: the demo's figures then add to the earlier ones. Counted by a real collector."""

from __future__ import annotations

from pathlib import Path

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.earlier_runs import earlier_runs_note, runs_held
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector


def _one_run(endpoint: str, call_id: str) -> None:
    client = ctxledger.configure(service_name="earlier", endpoint=endpoint, ledger="off")
    try:
        with ctxledger.run("earlier-agent"):
            ctxledger.measure(sc.STAGE_ORIGINAL, {"rows": [1, 2]}, tool_call_id=call_id)
        assert client.flush(timeout_s=30)
    finally:
        client.shutdown(timeout_s=5)
        ctxledger.configure(service_name="idle", export=False, ledger="off")


def test_the_runs_a_database_held_before_the_demo_are_counted(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    settings = Settings(database_url=database, sweep_interval_s=3600)
    with LiveCollector(settings) as collector:
        assert runs_held(collector.url) == 0
        assert earlier_runs_note(runs_held(collector.url), database) is None
        _one_run(collector.url, "call_a")
        _one_run(collector.url, "call_b")
        held = runs_held(collector.url)
    assert held == 2
    note = earlier_runs_note(held, database)
    assert note is not None
    assert f"{database} already held 2 runs from earlier" in note
    assert "delete the SQLite file" in note


def test_the_note_for_a_server_database_and_one_run() -> None:
    note = earlier_runs_note(1, "postgresql://ctx:***@db/ctxledger")
    assert note is not None
    assert "already held 1 run from earlier" in note
    assert "point CTXLEDGER_DATABASE_URL at an empty database" in note


def test_nothing_is_said_when_the_collector_cannot_be_asked() -> None:
    assert runs_held("http://127.0.0.1:9") is None
    assert earlier_runs_note(None, "sqlite:///x.db") is None
