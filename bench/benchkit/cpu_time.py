"""CPU seconds spent by each party of an ingest run (client, collector, database server),
read from /proc (Linux only): on a machine where all three share the cores, who spends
the CPU says what limits the throughput."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchkit.process_memory import process_tree

_PROC = Path("/proc")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds; 0 once it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    # The command name (field 2) may hold spaces; the fields after it start past ")".
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def _named(command: str) -> list[int]:
    pids: list[int] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == command:
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@dataclass(frozen=True)
class CpuSnapshot:
    client_s: float
    collector_s: float
    #: CPU seconds of each database server process, by pid.
    database: dict[int, float]


def snapshot(collector_pid: int) -> CpuSnapshot:
    """The CPU seconds so far of this process, the collector's tree and every process
    named ``postgres`` (the server's backends and its WAL writer and checkpointer)."""
    times = os.times()
    return CpuSnapshot(
        client_s=times.user + times.system,
        collector_s=sum(_cpu_s(pid) for pid in process_tree(collector_pid)),
        database={pid: _cpu_s(pid) for pid in _named("postgres")},
    )


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds each party spent between two snapshots."""

    client_s: float
    collector_s: float
    database_s: float

    @property
    def total_s(self) -> float:
        return self.client_s + self.collector_s + self.database_s


def between(before: CpuSnapshot, after: CpuSnapshot) -> CpuUse:
    # A backend that started during the run counts from zero; one that ended is lost,
    # which the collector's pooled connections do not do while it runs.
    database = sum(
        seconds - before.database.get(pid, 0.0) for pid, seconds in after.database.items()
    )
    return CpuUse(
        client_s=after.client_s - before.client_s,
        collector_s=after.collector_s - before.collector_s,
        database_s=database,
    )
