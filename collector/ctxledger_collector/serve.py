"""Run the collector under uvicorn; optionally call back once it answers ``/readyz``."""

from __future__ import annotations

import sys
import threading
import time
import urllib.request
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from ctxledger_collector.alerts.config import AlertsConfigError
from ctxledger_collector.app import SchemaNotMigrated, create_app, load_alerts, prepare_database
from ctxledger_collector.exposure import exposure_problem, is_loopback_host
from ctxledger_collector.forwarding.destinations import ForwardConfigError
from ctxledger_collector.malloc_arenas import limit_malloc_arenas
from ctxledger_collector.settings import Settings

#: After the app stopped, how long stuck worker threads may hold the process.
EXIT_DEADLINE_S = 2.0


def create_served_app() -> FastAPI:
    """The app of one ``serve`` worker process, its exit bounded."""
    return create_app(Settings(), exit_deadline_s=EXIT_DEADLINE_S)


def _wait_until_ready(url: str, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def _call_when_ready(url: str, on_ready: Callable[[str], None]) -> None:
    if not _wait_until_ready(url):
        print(f"ctxledger serve: {url} did not become ready", file=sys.stderr)
        return
    on_ready(url)


def serve(
    host: str = "127.0.0.1",
    port: int = 4318,
    log_level: str = "warning",
    on_ready: Callable[[str], None] | None = None,
    workers: int = 1,
    insecure: bool = False,
) -> int:
    """Serve until interrupted. Refuses to start on an un-migrated database (exit 2).
    On SIGTERM it stops accepting, lets the requests in flight finish for at most
    ``CTXLEDGER_SHUTDOWN_TIMEOUT_S`` (then cancels them), shuts the app down and exits.

    ``on_ready`` is called with the base URL once ``/readyz`` answers, from a background
    thread, while the collector keeps serving. ``workers`` > 1 runs that many processes on
    one port (PostgreSQL only: they judge the same traces under its per-trace locks, which
    SQLite's single writer would only make them queue for). A ``host`` other machines can
    reach needs ingest and read keys unless ``insecure`` (exit 2).
    """
    try:
        settings = Settings()
    except ValidationError as error:
        print(f"ctxledger serve: invalid settings: {error}", file=sys.stderr)
        return 2
    problem = exposure_problem(
        host,
        has_ingest_keys=bool(settings.api_key_set()),
        has_read_keys=bool(settings.read_key_set()),
        insecure=insecure,
    )
    if problem:
        print(f"ctxledger serve: {problem}", file=sys.stderr)
        return 2
    if insecure and not is_loopback_host(host):
        print(
            f"ctxledger serve: WARNING: --insecure: listening on {host!r} without ingest and "
            "read keys; anyone who can reach the port can read and write the audit store",
            file=sys.stderr,
        )
    if workers > 1 and settings.database_url.startswith("sqlite"):
        print(
            "ctxledger serve: several workers need PostgreSQL; SQLite has one writer at a "
            "time (run one worker, or set CTXLEDGER_DATABASE_URL to a PostgreSQL database)",
            file=sys.stderr,
        )
        return 2
    try:
        load_alerts(settings)
    except AlertsConfigError as error:
        print(f"ctxledger serve: invalid alert rules in {settings.alerts_file}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    try:
        destinations = settings.forward_destinations()
    except ForwardConfigError as error:
        print(f"ctxledger serve: {error}", file=sys.stderr)
        return 2
    try:
        prepare_database(settings)
    except SchemaNotMigrated as error:
        print(f"ctxledger serve: {error}", file=sys.stderr)
        return 2
    url = f"http://{host}:{port}"
    print(
        f"ctxledger collector on {url} (OTLP: POST /v1/traces, API: /api/v1, docs: /docs), "
        f"storing in {settings.database_url}",
        file=sys.stderr,
    )
    for destination in destinations:
        print(f"  forwarding accepted exports to {destination.name}", file=sys.stderr)
        if destination.lacks_path:
            print(
                "  (that URL has no path: requests are POSTed to it as given; OTLP/HTTP "
                "backends take traces at .../v1/traces)",
                file=sys.stderr,
            )
    # Before the server's threads allocate (and before workers start: they inherit it).
    limit_malloc_arenas(settings.malloc_arenas)
    if on_ready is not None:
        threading.Thread(target=_call_when_ready, args=(url, on_ready), daemon=True).start()
    if workers > 1:  # each worker process builds its app from the same CTXLEDGER_* settings
        uvicorn.run(
            "ctxledger_collector.serve:create_served_app",
            factory=True,
            host=host,
            port=port,
            log_level=log_level,
            workers=workers,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
        )
    else:
        uvicorn.run(
            create_app(settings, exit_deadline_s=EXIT_DEADLINE_S),
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
        )
    return 0
