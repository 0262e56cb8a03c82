"""How to start the dashboard: ``streamlit run`` on the packaged app, pointed at a collector
(the ``ctxledger`` command runs it, and stops it with its process group)."""

from __future__ import annotations

import os
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
