"""Test-suite wide setup: the SDK in ``sdk/`` and the command line in ``cli/`` are
importable without installing them or setting ``PYTHONPATH`` (an installed or PYTHONPATH
copy is left to take precedence)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]

for _package, _source_dir in (("ctxledger", _ROOT / "sdk"), ("ctxledger_cli", _ROOT / "cli")):
    if importlib.util.find_spec(_package) is None and _source_dir.is_dir():
        sys.path.insert(0, str(_source_dir))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CTXLEDGER_* or OTEL_* setting of the developer's shell leaks into a test."""
    for key in list(os.environ):
        if key.startswith(("CTXLEDGER_", "OTEL_")):
            monkeypatch.delenv(key)
