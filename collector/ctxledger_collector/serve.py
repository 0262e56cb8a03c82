"""Run the collector under uvicorn, optionally sending the demo incidents to itself."""

from __future__ import annotations

import sys
import threading
import time
import urllib.request

import uvicorn

from ctxledger_collector.alerts.config import AlertsConfigError
from ctxledger_collector.app import SchemaNotMigrated, create_app, load_alerts, prepare_database
from ctxledger_collector.settings import Settings


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


def _send_demo(url: str) -> None:
    from ctxledger.cli import run_demo

    if not _wait_until_ready(url):
        print(f"ctxledger serve --demo: {url} did not become ready", file=sys.stderr)
        return
    run_demo(url, ledger="off", everything=True)
    print("\nThe collector keeps running; press Ctrl-C to stop it.", file=sys.stderr)


def serve(
    host: str = "127.0.0.1", port: int = 4318, log_level: str = "warning", demo: bool = False
) -> int:
    """Serve until interrupted. Refuses to start on an un-migrated database (exit 2)."""
    settings = Settings()
    try:
        load_alerts(settings)
    except AlertsConfigError as error:
        print(f"ctxledger serve: invalid alert rules in {settings.alerts_file}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
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
    if demo:
        threading.Thread(target=_send_demo, args=(url,), daemon=True).start()
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level)
    return 0
