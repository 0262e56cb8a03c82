"""Small helpers shared by the end-to-end tests: span selection, waiting, subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ctxledger import semconv as sc
from tests.tiktoken_reference import reference_count

from .otlp_receiver import ReceivedSpan

REPO_ROOT = Path(__file__).resolve().parents[2]
SDK_DIR = REPO_ROOT / "sdk"
CLI_DIR = REPO_ROOT / "cli"


def stage_spans(spans: Iterable[ReceivedSpan], tool_call_id: str) -> dict[str, ReceivedSpan]:
    """The stage measurement spans of one tool call, by stage (a stage seen twice fails)."""
    found: dict[str, ReceivedSpan] = {}
    for span in spans:
        attrs = span.attributes
        if sc.STAGE in attrs and attrs.get(sc.TOOL_CALL_ID) == tool_call_id:
            stage = attrs[sc.STAGE]
            assert stage not in found, f"stage {stage!r} of {tool_call_id} measured twice"
            found[stage] = span
    return found


def manifest_spans(spans: Iterable[ReceivedSpan]) -> list[ReceivedSpan]:
    """Request manifests (contract section 3): request id and tool call ids, no stage."""
    return [
        s
        for s in spans
        if sc.STAGE not in s.attributes
        and sc.REQUEST_ID in s.attributes
        and sc.REQUEST_TOOL_CALL_IDS in s.attributes
    ]


def count_tokens(text: str, tokenizer: str) -> int:
    """Tokens of ``text`` with tiktoken, independently of the SDK (offline)."""
    return reference_count(text, tokenizer)


def wait_for(predicate: Callable[[], bool], timeout_s: float = 20.0, what: str = "") -> None:
    """Poll ``predicate`` until it holds; fail the test if it never does."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.02)


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python: ``sdk`` and ``cli`` importable, no inherited
    ctxledger, OpenTelemetry or pytest settings (the child behaves as a user's process would)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CTXLEDGER_", "OTEL_", "PYTEST_"))
    }
    inherited = filter(None, env.get("PYTHONPATH", "").split(os.pathsep))
    paths = [str(SDK_DIR), str(CLI_DIR), *inherited]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this interpreter with ``args`` from the repository's root, as a user would
    (the repository's code on the path); its output captured, its exit code not checked."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_example(example: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<example>``; it must exit 0."""
    done = run_python(f"examples/{example}", *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
