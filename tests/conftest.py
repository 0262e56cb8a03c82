"""Test-suite wide setup: the SDK in ``sdk/`` is importable without installing it or
setting ``PYTHONPATH`` (an installed or PYTHONPATH copy is left to take precedence)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SDK_DIR = Path(__file__).resolve().parents[1] / "sdk"

if importlib.util.find_spec("ctxledger") is None and _SDK_DIR.is_dir():
    sys.path.insert(0, str(_SDK_DIR))
