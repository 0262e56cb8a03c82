"""Small helpers shared by the end-to-end tests: span selection, waiting, subprocesses."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import httpx

from ctxledger import semconv as sc
from ctxledger_dashboard.launch import dashboard_command, dashboard_environment
from tests.collector.live_collector import free_port
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


def run_python(
    *args: str,
    cwd: Path = REPO_ROOT,
    env: dict[str, str] | None = None,
    timeout_s: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run this interpreter with ``args`` as a user would (the repository's code on the
    path), from ``cwd``, in ``env`` (default: :func:`subprocess_env`); its output captured,
    its exit code not checked."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=subprocess_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def run_example(example: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<example>``; it must exit 0."""
    done = run_python(f"examples/{example}", *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@contextlib.contextmanager
def provider_process(*flags: str) -> Iterator[str]:
    """``ctxledger provider --port <free> *flags`` in a child process, run from the
    repository's root as a user runs it; yields its URL once it accepts connections."""
    port = free_port()
    command = [sys.executable, "-m", "ctxledger_cli", "provider", "--port", str(port), *flags]
    server = subprocess.Popen(command, cwd=REPO_ROOT, env=subprocess_env(), stderr=subprocess.PIPE)

    def accepting() -> bool:
        if server.poll() is not None:
            _, errors = server.communicate()
            raise AssertionError(f"ctxledger provider exited: {errors.decode()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        return False

    try:
        wait_for(accepting, 30, "ctxledger provider to listen")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.communicate(timeout=10)


def _answers_200(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def serve_until_ready(
    port: int, *flags: str, cwd: Path, env: dict[str, str], pass_fds: Sequence[int] = ()
) -> tuple[bool, str]:
    """``ctxledger serve --port PORT *flags`` in a child process until its ``/readyz``
    answers 200 or it exits (at most 60 s), then stopped: whether it was ready, and what it
    wrote to stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--port", str(port), *flags],
        cwd=cwd,
        env=env,
        pass_fds=pass_fds,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    readyz = f"http://127.0.0.1:{port}/readyz"
    try:
        wait_for(lambda: _answers_200(readyz) or process.poll() is not None, 60, "readyz")
        ready = _answers_200(readyz)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    return ready, stderr


def output_until(process: subprocess.Popen[str], marker: str, timeout_s: float) -> list[str]:
    """The lines ``process`` printed up to the first that holds ``marker``; fails if it
    exited first. It is killed if no such line comes within ``timeout_s``, so the read ends."""
    watchdog = threading.Timer(timeout_s, process.kill)
    watchdog.start()
    output: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip())
            if marker in line:
                break
        assert process.poll() is None, "\n".join(output)
    finally:
        watchdog.cancel()
    return output


@contextlib.contextmanager
def dashboard_process(api_url: str, workdir: Path) -> Iterator[str]:
    """The dashboard as ``ctxledger dashboard`` starts it, on a free port in a child
    process run from ``workdir`` and reading the collector at ``api_url``; yields its URL
    once it serves."""
    port = free_port()
    dashboard = subprocess.Popen(
        dashboard_command("127.0.0.1", port),
        env=dashboard_environment(api_url),
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers_200(f"{url}/_stcore/health"):
            assert dashboard.poll() is None and time.monotonic() < deadline, "no dashboard"
            time.sleep(0.2)
        yield url
    finally:
        dashboard.terminate()
        dashboard.wait(timeout=30)
