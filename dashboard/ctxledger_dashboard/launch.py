"""Start the dashboard: ``streamlit run`` on the packaged app, pointed at a collector."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

APP = Path(__file__).with_name("streamlit_app.py")


def dashboard_command(host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.headless",
        "true",
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def dashboard_environment(api_url: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The dashboard's environment: ``base`` (default: this process's), pointed at
    ``api_url``; its read key comes along as ``CTXLEDGER_READ_KEY``."""
    return {**(os.environ if base is None else base), "CTXLEDGER_API_URL": api_url}


def run_dashboard(api_url: str, host: str = "127.0.0.1", port: int = 8501) -> int:
    """Run the dashboard in the foreground until interrupted."""
    print(f"ctxledger dashboard on http://{host}:{port} reading {api_url}", file=sys.stderr)
    try:
        return subprocess.call(dashboard_command(host, port), env=dashboard_environment(api_url))
    except KeyboardInterrupt:
        return 0
