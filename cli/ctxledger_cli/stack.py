"""``ctxledger up``: the collector (embedded SQLite by default) and the dashboard as child
processes, the demo incidents sent once both are up, and a clean stop on Ctrl-C, SIGTERM or
SIGHUP.

Both ports are bound before anything starts (a taken one is refused, naming its flag), and
the collector serves on the socket bound here, so the demo reaches this collector or none.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable

from ctxledger_cli.children import start_child, stop_children, stop_signals_as_interrupt
from ctxledger_cli.demo.collector_verdicts import seed_004_dashboard_link
from ctxledger_cli.demo.runner import run_demo
from ctxledger_cli.earlier_runs import earlier_runs_note, runs_held
from ctxledger_collector.ops.exposure import is_loopback_host
from ctxledger_collector.ops.listen_ports import reserve_ports
from ctxledger_collector.storage.database_url import given_database_url, redact_database_url
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
            return child.poll() is None
        time.sleep(0.2)
    return False


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
    """Run the stack until Ctrl-C (or SIGTERM, SIGHUP); returns the exit status."""
    if not insecure and not is_loopback_host(host):
        log(
            f"ctxledger up: refusing to listen on {host!r}, which other machines can reach: "
            "the dashboard has no login of its own. Bind to 127.0.0.1 (and put an "
            "authenticating reverse proxy in front), or pass --insecure (docs/security.md)"
        )
        return 2
    reserved = reserve_ports(
        "up", host, [(collector_port, "--port"), (dashboard_port, "--dashboard-port")]
    )
    if isinstance(reserved, str):
        log(reserved)
        return 2
    children: list[subprocess.Popen[bytes]] = []
    with stop_signals_as_interrupt():
        try:
            return _run_stack(host, reserved, demo, insecure, children, log)
        except KeyboardInterrupt:
            return 0
        finally:
            for sock in reserved:
                sock.close()
            if children:
                with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
                    log("ctxledger up: stopping the dashboard and the collector…")
                stop_children(list(reversed(children)))


def _run_stack(
    host: str,
    sockets: list[socket.socket],
    demo: bool,
    insecure: bool,
    children: list[subprocess.Popen[bytes]],
    log: Callable[[str], None],
) -> int:
    """Start both children on the ``sockets`` bound for them, then wait for Ctrl-C."""
    collector_socket, dashboard_socket = sockets
    collector_port, dashboard_port = (sock.getsockname()[1] for sock in sockets)
    collector_url = f"http://{host}:{collector_port}"
    dashboard_url = f"http://{host}:{dashboard_port}"
    env = {**os.environ, "CTXLEDGER_DASHBOARD_URL": dashboard_url}
    if env.get("CTXLEDGER_READ_KEY") and not env.get("CTXLEDGER_READ_KEYS"):
        env["CTXLEDGER_READ_KEYS"] = env["CTXLEDGER_READ_KEY"]  # the dashboard's own key
    alert_log = _alert_log(env)
    fd = collector_socket.fileno()
    serve = ["serve", "--fd", str(fd), "--host", host, "--port", str(collector_port)]
    collector = start_child(
        [sys.executable, "-m", "ctxledger_cli", *serve, *(["--insecure"] if insecure else [])],
        env,
        pass_fds=[fd],
    )
    children.append(collector)
    collector_socket.close()  # the collector holds the port now, and frees it when it exits
    if not _wait_for(f"{collector_url}/readyz", collector):
        log(f"ctxledger up: the collector did not start on {collector_url}")
        return 1
    dashboard_socket.close()  # Streamlit binds the port itself
    dashboard = start_child(
        dashboard_command(host, dashboard_port), dashboard_environment(collector_url, env)
    )
    children.append(dashboard)
    if not _wait_for(f"{dashboard_url}/_stcore/health", dashboard):
        log(f"ctxledger up: the dashboard did not start on {dashboard_url}")
        return 1
    held_before = runs_held(collector_url) if demo else None
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
    database = redact_database_url(given_database_url().url)
    if note := earlier_runs_note(held_before, database):
        log(note)
    log("  Press Ctrl-C to stop both.")
    while all(child.poll() is None for child in children):
        time.sleep(0.3)
    log(f"ctxledger up: the {'collector' if collector.poll() is not None else 'dashboard'} stopped")
    return 1
