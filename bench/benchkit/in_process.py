"""The collector's work on export bodies in this process, no HTTP: decode and derive
(``decode_export_request``), then store and judge (``Store.ingest``), timed apart."""

from __future__ import annotations

import time

from ctxledger.text import count_with_the_fastest_counter
from ctxledger.verdicts import Tolerances
from ctxledger_collector.ingest.otlp_decode import PROTOBUF, decode_export_request
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.database import make_engine


def collector_seconds(url: str, bodies: list[bytes]) -> tuple[float, float]:
    """(decode seconds, store-and-judge seconds) for ``bodies`` on the database ``url``,
    counting tokens as a collector does (the fastest counter from the first count)."""
    count_with_the_fastest_counter()
    engine = make_engine(url)
    store = Store(engine, Tolerances())
    decoding = storing = 0.0
    try:
        for body in bodies:
            started = time.perf_counter()
            batch = fit_to_columns(decode_export_request(body, PROTOBUF))
            decoded = time.perf_counter()
            store.ingest(batch)
            decoding += decoded - started
            storing += time.perf_counter() - decoded
    finally:
        engine.dispose()
    return decoding, storing
