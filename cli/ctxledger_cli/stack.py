"""``ctxledger up``: the collector (embedded SQLite by default) and the dashboard as child
processes, the demo incidents sent once both are up, and a clean stop on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from types import FrameType

from ctxledger_cli.demo.collector_verdicts import seed_004_dashboard_link
from ctxledger_cli.demo.runner import run_demo
from ctxledger_collector.exposure import is_loopback_host
from ctxledger_dashboard.launch import dashboard_command, dashboard_environment


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_for(url: str, child: subprocess.Popen[bytes], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return False
        if _answers(url):
            return True
        time.sleep(0.2)
    return False


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + 10
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


#: Where ``up`` has the built-in alert rules log their notifications: a file in the working
#: folder (beside the embedded database), so alert JSON does not flood the terminal.
ALERT_LOG = "ctxledger-alerts.jsonl"


def _alert_log(env: dict[str, str]) -> str | None:
    """Send the built-in log sink to a file, unless the user chose rules or a file."""
    if env.get("CTXLEDGER_ALERTS_FILE"):
        return None
    env.setdefault("CTXLEDGER_ALERT_LOG_FILE", os.path.abspath(ALERT_LOG))
    return env["CTXLEDGER_ALERT_LOG_FILE"]


def up(
    host: str = "127.0.0.1",
    collector_port: int = 4318,
    dashboard_port: int = 8501,
    demo: bool = True,
    insecure: bool = False,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> int:
    """Run the stack until Ctrl-C (or SIGTERM); returns the exit status."""
    collector_url = f"http://{host}:{collector_port}"
    dashboard_url = f"http://{host}:{dashboard_port}"
    env = {**os.environ, "CTXLEDGER_DASHBOARD_URL": dashboard_url}
    if env.get("CTXLEDGER_READ_KEY") and not env.get("CTXLEDGER_READ_KEYS"):
        env["CTXLEDGER_READ_KEYS"] = env["CTXLEDGER_READ_KEY"]  # the dashboard's own key
    if not insecure and not is_loopback_host(host):
        log(
            f"ctxledger up: refusing to listen on {host!r}, which other machines can reach: "
            "the dashboard has no login of its own. Bind to 127.0.0.1 (and put an "
            "authenticating reverse proxy in front), or pass --insecure (docs/security.md)"
        )
        return 2
    alert_log = _alert_log(env)
    collector = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxledger_cli",
            "serve",
            "--host",
            host,
            "--port",
            str(collector_port),
            *(["--insecure"] if insecure else []),
        ],
        env=env,
    )
    children = [collector]
    stopping = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        if not _wait_for(f"{collector_url}/readyz", collector):
            log(f"ctxledger up: the collector did not start on {collector_url}")
            return 1
        dashboard = subprocess.Popen(
            dashboard_command(host, dashboard_port), env=dashboard_environment(collector_url, env)
        )
        children.append(dashboard)
        if not _wait_for(f"{dashboard_url}/_stcore/health", dashboard):
            log(f"ctxledger up: the dashboard did not start on {dashboard_url}")
            return 1
        if demo:
            run_demo(collector_url, ledger="off", everything=True)
        log("")
        log(f"  Dashboard:  {dashboard_url}")
        log(f"  Collector:  {collector_url}  (OTLP: POST /v1/traces · API docs: /docs)")
        link = seed_004_dashboard_link(collector_url) if demo else None
        if link:
            log(f"  Seed 004's silent loss: {link}")
        if alert_log:
            log(f"  Alerts:     {alert_log} (one JSON line per notification)")
        log("  Press Ctrl-C to stop both.")
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.3)
        return 0 if stopping else 1
    except KeyboardInterrupt:
        return 0
    finally:
        log("ctxledger up: stopping the dashboard and the collector…")
        _stop(list(reversed(children)))
        signal.signal(signal.SIGTERM, previous)
