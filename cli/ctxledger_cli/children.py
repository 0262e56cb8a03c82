"""The server processes a command starts, each in a process group of its own.

Stopping a child signals its whole group, so what the child started in turn (Streamlit's
or uvicorn's own processes) stops with it. Ctrl-C reaches only the command, which stops
its children; SIGTERM (a service manager's stop) and SIGHUP (the terminal closed, the SSH
connection dropped: the children, in sessions of their own, are not told) are treated
like Ctrl-C, so nothing is left listening.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from types import FrameType

#: How long stopped children may take to shut down cleanly before they are killed.
STOP_GRACE_S = 10.0
#: The signals that stop a command as Ctrl-C does (SIGHUP where the platform has it).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def start_child(
    command: Sequence[str], env: Mapping[str, str], pass_fds: Collection[int] = ()
) -> subprocess.Popen[bytes]:
    """Start ``command`` as the leader of a new process group (and session)."""
    return subprocess.Popen(command, env=env, pass_fds=pass_fds, start_new_session=True)


def _signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    # The group outlives its leader while the leader's own children still run.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """A second Ctrl-C, SIGTERM or SIGHUP must not cut the stop short and leave children
    behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def stop_children(children: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every child's group, wait up to ``STOP_GRACE_S``, then SIGKILL what is left."""
    with _signals_ignored():
        for child in children:
            _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        for child in children:
            _signal_group(child, signal.SIGKILL)
            child.wait()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` as Ctrl-C does."""
    others = [s for s in STOP_SIGNALS if s != signal.SIGINT]
    previous = {s: signal.signal(s, _interrupt) for s in others}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_in_foreground(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``command`` until it exits (its status) or Ctrl-C, SIGTERM or SIGHUP stops it
    (0)."""
    children: list[subprocess.Popen[bytes]] = []
    with stop_signals_as_interrupt():
        try:
            children.append(start_child(command, env))
            return children[0].wait()
        except KeyboardInterrupt:
            return 0
        finally:
            stop_children(children)
