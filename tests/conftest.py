"""Test-suite wide setup: the SDK in ``sdk/`` is importable without installing it or
setting ``PYTHONPATH`` (an installed or PYTHONPATH copy is left to take precedence)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_SDK_DIR = Path(__file__).resolve().parents[1] / "sdk"

if importlib.util.find_spec("ctxledger") is None and _SDK_DIR.is_dir():
    sys.path.insert(0, str(_SDK_DIR))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CTXLEDGER_* or OTEL_* setting of the developer's shell leaks into a test."""
    for key in list(os.environ):
        if key.startswith(("CTXLEDGER_", "OTEL_")):
            monkeypatch.delenv(key)
