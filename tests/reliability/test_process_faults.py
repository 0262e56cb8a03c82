"""The collector process itself fails: SIGTERM mid-load (with a request that never
finishes, answered 503 before the shutdown timeout) and kill -9 under load, ten times
over, each as a `ctxledger serve` process fed by stock exporters."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine

from tests.collector.live_collector import free_port
from tests.reliability.kit import Load, ServeProcess, stored_span_ids, wait_until

_ALERTS = """\
group_window_s: 1
rules:
  - name: silent-dropped-orphaned
    verdicts: [silent, dropped, orphaned]
    severity: critical
sinks:
  - type: log
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text(_ALERTS)
    return {
        "CTXLEDGER_ALERTS_FILE": str(alerts),
        "CTXLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ctxledger.db'}",
        "CTXLEDGER_INGEST_SPOOL_DIR": str(tmp_path / "spool"),
        "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
        "CTXLEDGER_ALERT_SETTLE_S": "0.2",
        **extra,
    }


def _hung_request(port: int) -> socket.socket:
    """An export whose body never arrives: it holds an admission slot and a connection."""
    hung = socket.create_connection(("127.0.0.1", port))
    hung.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 100000\r\n\r\n" + b"\0" * 10
    )
    return hung


def test_sigterm_mid_load_commits_what_was_answered_and_exits_in_bounded_time(
    tmp_path: Path,
) -> None:
    collector = ServeProcess(
        _env(tmp_path, CTXLEDGER_INGEST_BODY_TIMEOUT_S="600"), tmp_path / "serve.log"
    ).start("--shutdown-timeout", "2")
    load = Load(collector.url, journeys=10, senders=2, timeout_s=5).start()
    try:
        load.wait_for_exports(4)
        hung = _hung_request(collector.port)
        time.sleep(0.2)
        collector.signal(signal.SIGTERM)
        # Without the shutdown timeout the hung request would hold the exit for 600 s.
        collector.wait(timeout_s=30)
        hung.settimeout(5)
        answer = hung.recv(65536)
        hung.close()
    finally:
        load.stop()
        collector.stop()
    assert load.acked, "no export was answered before SIGTERM"
    stored = stored_span_ids(f"sqlite:///{tmp_path / 'ctxledger.db'}")
    assert load.acked <= stored  # every 200 was committed
    assert stored <= load.sent
    # Answered before the shutdown timeout cancels it (a cancelled request gets 500,
    # which the stock exporter does not retry).
    assert answer.startswith(b"HTTP/1.1 503 "), answer
    assert b"retry-after: " in answer.lower()


def _no_duplicate_alerts(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            twice = connection.exec_driver_sql(
                "SELECT batch_id, sink FROM alert_notifications GROUP BY batch_id, sink "
                "HAVING COUNT(*) > 1"
            ).fetchall()
            stuck = connection.exec_driver_sql(
                "SELECT COUNT(*) FROM alert_notifications WHERE lease_until IS NOT NULL"
            ).scalar_one()
            notified = connection.exec_driver_sql(
                "SELECT COUNT(*) FROM alert_notifications WHERE delivery = 'delivered'"
            ).scalar_one()
    finally:
        engine.dispose()
    assert twice == [], f"batches notified twice: {twice}"
    assert stuck == 0, "leases left behind after a clean stop"
    assert notified > 0


def test_kill_9_under_load_ten_times_loses_no_acknowledged_span(tmp_path: Path) -> None:
    port = free_port()
    database_url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    # A kill between a notification's claim and its "delivered" leaves the killed
    # worker's lease; a short one expires within the clean run at the end, whose worker
    # then delivers the notification again (at least once) and must leave no lease.
    env = _env(tmp_path, CTXLEDGER_ALERT_LEASE_S="2")
    collector = ServeProcess(env, tmp_path / "serve.log", port=port)
    load = Load(collector.url, journeys=5, senders=2, timeout_s=3)
    try:
        for kill in range(10):
            collector.start()
            if kill == 0:
                load.start()
            acked = len(load.acked)
            wait_until(lambda n=acked: len(load.acked) > n, what="an export answered 200")
            collector.signal(signal.SIGKILL)
            assert collector.wait(timeout_s=10) == -signal.SIGKILL
        collector.start()  # restart clean: WAL recovered, ready, spool replayed
        wait_until(
            lambda: (
                httpx.get(collector.url + "/readyz", timeout=10).json()["spool"]["requests"] == 0
            ),
            what="a ready collector with an empty spool",
        )
        load.wait_for_exports(load.exports + 2)
        load.stop()
        assert httpx.get(collector.url + "/readyz", timeout=10).status_code == 200
        time.sleep(2.5)  # the last events are notified (settle 0.2 s, window 1 s, tick 1 s)
    finally:
        load.stop()
        collector.stop()
    assert collector.process is not None and collector.process.returncode in (0, -15)
    stored = stored_span_ids(database_url)
    assert load.acked <= stored, f"{len(load.acked - stored)} acknowledged spans lost"
    assert stored <= load.sent
    _no_duplicate_alerts(database_url)
