"""A bound on exiting: once the app has stopped, a process whose worker threads are stuck
(a database call that never returns holds a thread Python waits for at exit) ends anyway
``deadline_s`` after the interpreter began to exit.

Nothing that was acknowledged is at stake: a thread still inside a request never sent
its answer, and the client retries the export.
"""

from __future__ import annotations

import logging
import os
import threading
import time

logger = logging.getLogger("ctxledger.collector")


def _watch(deadline_s: float) -> None:
    # The interpreter marks the main thread finished before it joins the other threads.
    while threading.main_thread().is_alive():
        time.sleep(0.1)
    time.sleep(deadline_s)
    stuck = [t.name for t in threading.enumerate() if not t.daemon and t.is_alive()]
    logger.error("ctxledger collector: exiting with threads still busy: %s", stuck)
    logging.shutdown()
    os._exit(0)


def arm_exit_deadline(deadline_s: float) -> None:
    threading.Thread(target=_watch, args=(deadline_s,), name="ctxledger-exit", daemon=True).start()
