"""Run the collector under uvicorn; optionally call back once it answers ``/readyz``."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from ctxledger_collector.alerts.config import AlertsConfigError
from ctxledger_collector.app import create_app, load_alerts
from ctxledger_collector.forwarding.destinations import ForwardConfigError
from ctxledger_collector.ops.database_start import database_problem
from ctxledger_collector.ops.exposure import exposure_problem, is_loopback_host
from ctxledger_collector.ops.listen_ports import reserve_ports
from ctxledger_collector.ops.malloc_arenas import limit_malloc_arenas
from ctxledger_collector.ops.malloc_mmap import fix_mmap_threshold
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database_url import redact_database_url, served_database_url

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


def _call_when_ready(
    url: str, on_ready: Callable[[str], None], server: uvicorn.Server | None = None
) -> None:
    """Once ``server`` listens (so ``url`` is this process, not another one on the port)
    and ``url`` answers ``/readyz``: ``on_ready(url)``. A server that fails to start never
    calls back."""
    if server is not None:
        while not server.started:
            if server.should_exit or not threading.main_thread().is_alive():
                return
            time.sleep(0.05)
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
    database_url_flag: bool = False,
    listen_socket: socket.socket | None = None,
) -> int:
    """Serve until interrupted. Refuses to start on a database it cannot use
    or that is not migrated (exit 2: one line, naming ``--database-url`` when
    ``database_url_flag``, else ``CTXLEDGER_DATABASE_URL``).
    On SIGTERM it stops accepting, lets the requests in flight finish for at most
    ``CTXLEDGER_SHUTDOWN_TIMEOUT_S`` (an export still unfinished 0.5 s before is answered
    503 + Retry-After, not cancelled: :mod:`.shutdown_drain`), shuts the app down and exits.

    ``on_ready`` is called with the base URL once ``/readyz`` answers, from a background
    thread, while the collector keeps serving. ``workers`` > 1 runs that many processes on
    one port (PostgreSQL only: they judge the same traces under its per-trace locks, which
    SQLite's single writer would only make them queue for). A ``host`` other machines can
    reach needs ingest and read keys unless ``insecure`` (exit 2). It binds ``host:port``
    before creating anything, and refuses a taken port (exit 2); with ``listen_socket``
    (a socket bound for it, e.g. by ``ctxledger up``) it serves on that one instead.
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
    if listen_socket is None:  # bound before anything is created, so a taken port costs nothing
        reserved = reserve_ports("serve", host, [(port, "--port")])
        if isinstance(reserved, str):
            print(reserved, file=sys.stderr)
            return 2
        (listen_socket,) = reserved
    with listen_socket:
        database = database_problem(settings, served_database_url(database_url_flag))
        if database:
            print(f"ctxledger serve: {database}", file=sys.stderr)
            return 2
        url = f"http://{host}:{port}"
        print(
            f"ctxledger collector on {url} (OTLP: POST /v1/traces, /v1/logs, API: /api/v1, "
            "docs: /docs), "
            f"storing in {redact_database_url(settings.database_url)}",
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
            if destination.logs_url is None:
                print(
                    "  (log exports are not forwarded there: its URL does not end in "
                    "/v1/traces, so its logs endpoint is unknown)",
                    file=sys.stderr,
                )
        # Before the server's threads allocate (and before workers start: they inherit it).
        limit_malloc_arenas(settings.malloc_arenas)
        fix_mmap_threshold(settings.malloc_mmap_threshold)
        if workers > 1:
            listen_socket.close()  # uvicorn's supervisor binds the port for its workers
            return _serve_workers(settings, host, port, log_level, workers, on_ready)
        return _serve_one(settings, listen_socket, host, port, log_level, on_ready)


def _serve_workers(
    settings: Settings,
    host: str,
    port: int,
    log_level: str,
    workers: int,
    on_ready: Callable[[str], None] | None,
) -> int:
    """``workers`` processes on one port, each building its app from the same settings."""
    if on_ready is not None:
        url = f"http://{host}:{port}"
        threading.Thread(target=_call_when_ready, args=(url, on_ready), daemon=True).start()
    uvicorn.run(
        "ctxledger_collector.serve:create_served_app",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        workers=workers,
        timeout_graceful_shutdown=settings.shutdown_timeout_s,
    )
    return 0


def _serve_one(
    settings: Settings,
    listen_socket: socket.socket,
    host: str,
    port: int,
    log_level: str,
    on_ready: Callable[[str], None] | None,
) -> int:
    """One process serving on ``listen_socket``; ``on_ready`` once it has started."""
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, exit_deadline_s=EXIT_DEADLINE_S),
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
        )
    )
    if on_ready is not None:
        url = f"http://{host}:{port}"
        threading.Thread(target=_call_when_ready, args=(url, on_ready, server), daemon=True).start()
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[listen_socket])
    return 0 if server.started else 1
