"""PostgreSQL stopped under load (a private server, stopped for longer than the stock
exporter's retries last): every export is acknowledged from the spool, the query API
answers 503, /readyz says unavailable and how much waits; a collector restarted during
the outage replays the spool left by the first once the database is back."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from ctxledger_collector.storage.migrate import upgrade
from tests.collector.live_collector import LiveCollector
from tests.reliability.kit import (
    Load,
    ServeProcess,
    metric,
    spooling_settings,
    stored_span_ids,
    wait_until,
)
from tests.reliability.private_postgres import private_postgres


def test_a_long_outage_loses_nothing_and_a_restart_replays_the_spool(tmp_path: Path) -> None:
    with private_postgres() as server:
        upgrade(server.url)
        settings = spooling_settings(server.url, tmp_path / "spool")
        with LiveCollector(settings) as first:
            load = Load(first.url, journeys=4, senders=1, pause_s=1.0).start()
            load.wait_for_exports(2)
            server.stop()
            outage_started = time.monotonic()
            load.wait_for_exports(load.exports + 3)

            query = httpx.get(first.url + "/api/v1/reports", timeout=10)
            assert query.status_code == 503
            assert query.headers["retry-after"] == "5"
            assert query.json() == {"detail": "storage unavailable; retry later"}
            ready = httpx.get(first.url + "/readyz", timeout=10)
            assert ready.status_code == 503
            assert ready.json()["spool"]["requests"] > 0
            # Longer than the stock exporter's retries (10 s at Retry-After: 5) would last.
            time.sleep(max(0.0, 11 - (time.monotonic() - outage_started)))
            load.stop()
        assert load.failed == set()
        spooled = sorted((tmp_path / "spool").iterdir())
        assert spooled, "the outage left nothing in the spool"

        server.start()
        # The restart is a `ctxledger serve` process of its own, as an operator's would be.
        second = ServeProcess(
            {
                "CTXLEDGER_DATABASE_URL": server.url,
                "CTXLEDGER_INGEST_SPOOL_DIR": str(tmp_path / "spool"),
                "CTXLEDGER_READY_MIN_FREE_BYTES": "0",
            },
            tmp_path / "serve.log",
        ).start()
        try:
            wait_until(
                lambda: metric(second.url, "ctxledger_ingest_spool_requests") == 0,
                what="the restarted collector's replay",
            )
            assert httpx.get(second.url + "/readyz", timeout=10).status_code == 200
        finally:
            second.stop()
        assert stored_span_ids(server.url) == load.sent
