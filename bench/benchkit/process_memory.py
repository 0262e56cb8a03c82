"""Resident memory of a process and its descendants, read from /proc (Linux only)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

_PROC = Path("/proc")


def _status_kib(pid: int, field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/<pid>/status in KiB; 0 once the process is gone."""
    try:
        for line in (_PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in (_PROC / str(pid) / "task").iterdir():
            text = (task / "children").read_text().split()
            found.extend(int(child) for child in text)
    except OSError:
        pass
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (uvicorn workers, if the collector forks any)."""
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in _children(parent)]
        tree.extend(frontier)
    return tree


def tree_rss_kib(pid: int) -> int:
    return sum(_status_kib(p, "VmRSS") for p in process_tree(pid))


def tree_peak_kib(pid: int) -> int:
    """The kernel's own high-water mark (VmHWM), summed over the tree's live processes."""
    return sum(_status_kib(p, "VmHWM") for p in process_tree(pid))


class RssSampler:
    """Samples the tree's VmRSS every ``interval_s`` in a thread; keeps the peak.

    VmHWM alone would miss the memory of a worker that has already exited and
    counts each process's own peak even if they never peaked together; the sampled sum
    sees the tree as a whole. The report gives the larger of the two."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="rss-sampler")

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.pid))
            self._stop.wait(self.interval_s)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop sampling; the peak in KiB (sampled sum or VmHWM, whichever is larger)."""
        self._stop.set()
        self._thread.join()
        return max(self.peak_kib, tree_peak_kib(self.pid))

    def current_kib(self) -> int:
        return tree_rss_kib(self.pid)


def is_supported() -> bool:
    return os.path.exists("/proc/self/status")
