"""The per-trace advisory locks writers take on PostgreSQL (ingest, the sweep, retention):
one statement takes every trace's lock, held until the transaction ends, and a writer
waiting for one of them waits with the ones before it held."""

from __future__ import annotations

import threading
import time

from sqlalchemy import text

from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.trace_locks import advisory_key, lock_traces


def _free(connection: object, trace_id: str) -> bool:
    """Whether another session could take the trace's lock now (and releases it)."""
    taken = connection.execute(  # type: ignore[attr-defined]
        text("SELECT pg_try_advisory_lock(:k)"), {"k": advisory_key(trace_id)}
    ).scalar()
    if taken:
        connection.execute(  # type: ignore[attr-defined]
            text("SELECT pg_advisory_unlock(:k)"), {"k": advisory_key(trace_id)}
        )
    return bool(taken)


def test_every_trace_of_a_batch_is_locked_until_commit(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    try:
        traces = [f"{n:032x}" for n in (3, 1, 2, 2)]
        with engine.connect() as observer:
            with engine.begin() as writer:
                lock_traces(writer, traces)
                assert not any(_free(observer, t) for t in traces)
                assert _free(observer, f"{9:032x}")  # a trace of no batch
            assert all(_free(observer, t) for t in traces)  # released at commit
    finally:
        engine.dispose()


def test_a_writer_waits_for_a_held_trace_and_takes_the_rest_after_it(postgres_url: str) -> None:
    """Writer 1 holds trace b. Writer 2 asks for a, b and c: it takes a (first in
    order), waits on b, and takes c only after writer 1 commits."""
    engine = make_engine(postgres_url)
    a, b, c = (f"{n:032x}" for n in (1, 2, 3))
    done = threading.Event()
    try:
        with engine.connect() as observer, engine.connect() as first:
            transaction = first.begin()
            lock_traces(first, [b])

            def second_writer() -> None:
                with engine.begin() as second:
                    lock_traces(second, [c, a, b])
                    done.set()

            waiter = threading.Thread(target=second_writer)
            waiter.start()
            deadline = time.monotonic() + 10
            while _free(observer, a):  # until writer 2 holds a
                assert time.monotonic() < deadline, "writer 2 never took trace a"
                time.sleep(0.02)
            time.sleep(0.2)
            assert not done.is_set() and _free(observer, c)  # waiting on b, c not yet taken
            transaction.commit()
            waiter.join(timeout=10)
            assert done.is_set()
    finally:
        engine.dispose()
