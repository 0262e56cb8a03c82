"""Test-suite wide setup: the SDK in ``sdk/`` and the command line in ``cli/`` are
importable without installing them or setting ``PYTHONPATH`` (an installed or PYTHONPATH
copy is left to take precedence)."""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]

for _package, _source_dir in (("ctxledger", _ROOT / "sdk"), ("ctxledger_cli", _ROOT / "cli")):
    if importlib.util.find_spec(_package) is None and _source_dir.is_dir():
        sys.path.insert(0, str(_source_dir))


@pytest.fixture(autouse=True)
def clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No CTXLEDGER_* or OTEL_* setting of the developer's shell leaks into a test, and the
    SDK's spool is a fresh folder of the test's own (created only if the SDK writes to it),
    never the user's cache directory."""
    for key in list(os.environ):
        if key.startswith(("CTXLEDGER_", "OTEL_")):
            monkeypatch.delenv(key)
    spool = tmp_path_factory.getbasetemp() / "spool" / uuid.uuid4().hex
    monkeypatch.setenv("CTXLEDGER_SPOOL_DIR", str(spool))
