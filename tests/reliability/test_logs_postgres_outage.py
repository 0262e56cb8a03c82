"""PostgreSQL stopped for 30 s under a load of log records from the stock OTLP log
exporter: every acknowledged record is stored once the database is back (id sets), and
none was refused: the spool took them all (contract section 8: the durability of §1)."""

from __future__ import annotations

import time
from pathlib import Path

from ctxledger_collector.storage.migrate import upgrade
from tests.collector.live_collector import LiveCollector
from tests.reliability.kit import metric, spooling_settings, wait_until
from tests.reliability.log_load import LogLoad, stored_call_ids
from tests.reliability.private_postgres import private_postgres

OUTAGE_S = 30.0


def test_postgres_stopped_30_s_loses_no_acknowledged_log_record(tmp_path: Path) -> None:
    with private_postgres() as server:
        upgrade(server.url)
        settings = spooling_settings(server.url, tmp_path / "spool")
        with LiveCollector(settings) as collector:
            load = LogLoad(collector.url, journeys=25, senders=2, pause_s=0.5).start()
            load.wait_for_exports(4)
            server.stop()
            stopped = time.monotonic()
            load.wait_for_exports(load.exports + 6)
            time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
            spooled = metric(collector.url, "ctxledger_ingest_spooled_total", outcome="kept")
            server.start()
            load.wait_for_exports(load.exports + 4)
            load.stop()
            wait_until(
                lambda: metric(collector.url, "ctxledger_ingest_spool_requests") == 0,
                what="the spool's replay",
            )
        assert spooled >= 6, "the outage spooled nothing"
        assert load.failed == set()
        stored = stored_call_ids(server.url)
        assert load.acked - stored == set(), f"{len(load.acked - stored)} acknowledged, lost"
        assert stored == load.acked
