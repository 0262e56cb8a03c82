"""The spool folder itself: atomic files that sort oldest first, claims that only one
process (here: one spool instance, each with its own token) can win, claims of processes
that are gone put back, a size bound that drops the oldest and counts them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from ctxledger._pipeline_stats import DropCounter
from ctxledger._spool import CLAIM, SUFFIX, TMP_PREFIX, Claim, DiskSpool, spans_in


def _spool(folder: Path, max_bytes: int = 1_000_000) -> tuple[DiskSpool, DropCounter]:
    counter = DropCounter()
    return DiskSpool(folder, max_bytes, counter), counter


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_files_are_whole_and_sort_oldest_first(tmp_path: Path) -> None:
    spool, counter = _spool(tmp_path / "spool")
    assert not (tmp_path / "spool").exists()  # nothing is created before something waits
    bodies = [f"batch {i}".encode() * (i + 1) for i in range(20)]
    for i, body in enumerate(bodies):
        assert spool.put(body, spans=i + 1)
    names = sorted(os.listdir(tmp_path / "spool"))
    assert all(n.endswith(SUFFIX) for n in names)  # no temporary file left behind
    assert [(tmp_path / "spool" / n).read_bytes() for n in names] == bodies
    assert [spans_in(n) for n in names] == list(range(1, 21))
    assert spool.pending() == (sum(range(1, 21)), sum(len(b) for b in bodies))
    assert counter.snapshot().spans_spooled == sum(range(1, 21))


def test_claims_are_taken_oldest_first_and_a_released_one_keeps_its_place(
    tmp_path: Path,
) -> None:
    spool, _ = _spool(tmp_path)
    for i in range(3):
        spool.put(f"batch {i}".encode(), spans=1)
    first = spool.claim()
    assert first is not None and spool.read(first) == b"batch 0"
    assert CLAIM in first.path.name if first.path else False
    spool.release(first)  # could not be sent now
    again = spool.claim()
    assert again is not None and spool.read(again) == b"batch 0"
    spool.done(again)
    rest = [spool.claim() for _ in range(3)]
    assert [spool.read(c) for c in rest if c is not None] == [b"batch 1", b"batch 2"]
    assert rest[2] is None


def test_each_file_is_claimed_once_among_competing_spools(tmp_path: Path) -> None:
    writer, _ = _spool(tmp_path)
    for i in range(300):
        writer.put(f"batch {i:03d}".encode(), spans=1)
    competitors = [DiskSpool(tmp_path, 1_000_000, DropCounter()) for _ in range(4)]
    won: list[list[bytes]] = [[] for _ in competitors]
    start = threading.Barrier(len(competitors))

    def drain(index: int) -> None:
        spool = competitors[index]
        start.wait()
        while (claim := spool.claim()) is not None:
            body = spool.read(claim)
            assert body is not None
            won[index].append(body)
            spool.done(claim)

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(competitors))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    everything = [body for bodies in won for body in bodies]
    assert sorted(everything) == [f"batch {i:03d}".encode() for i in range(300)]
    assert os.listdir(tmp_path) == []


def test_claims_and_temporary_files_of_a_gone_process_are_recovered(tmp_path: Path) -> None:
    spool, _ = _spool(tmp_path)
    spool.put(b"left by a crash", spans=3)
    (name,) = os.listdir(tmp_path)
    dead, alive = _dead_pid(), os.getppid()
    (tmp_path / name).rename(tmp_path / f"{name}{CLAIM}{dead}-deadbeef")
    spool.put(b"claimed by a live process", spans=1)
    live_name = next(n for n in os.listdir(tmp_path) if CLAIM not in n)
    (tmp_path / live_name).rename(tmp_path / f"{live_name}{CLAIM}{alive}-cafecafe")
    (tmp_path / f"{TMP_PREFIX}{dead}-deadbeef-00000000").write_bytes(b"half a batch")

    later, _ = _spool(tmp_path)  # the next process
    assert not later.has_backlog()
    later.recover_stale()
    assert sorted(os.listdir(tmp_path)) == sorted([name, f"{live_name}{CLAIM}{alive}-cafecafe"])
    claim = later.claim()
    assert claim is not None and later.read(claim) == b"left by a crash"
    assert claim.spans == 3


def test_a_claim_of_an_earlier_process_with_the_same_pid_is_recovered(tmp_path: Path) -> None:
    spool, _ = _spool(tmp_path)
    spool.put(b"batch", spans=1)
    (name,) = os.listdir(tmp_path)
    # A container restarted: the new process has the old one's pid, not its token.
    (tmp_path / name).rename(tmp_path / f"{name}{CLAIM}{os.getpid()}-0ldt0ken")
    spool.recover_stale()
    assert os.listdir(tmp_path) == [name]


def test_an_old_claim_is_recovered_whoever_holds_it(tmp_path: Path) -> None:
    counter = DropCounter()
    spool = DiskSpool(tmp_path, 1_000_000, counter, stale_after_s=60)
    spool.put(b"batch", spans=1)
    (name,) = os.listdir(tmp_path)
    claimed = tmp_path / f"{name}{CLAIM}{os.getppid()}-cafecafe"
    (tmp_path / name).rename(claimed)
    long_ago = time.time() - 3600
    os.utime(claimed, (long_ago, long_ago))
    spool.recover_stale()
    assert os.listdir(tmp_path) == [name]


def test_a_full_spool_drops_the_oldest_unclaimed_files_and_counts_their_spans(
    tmp_path: Path,
) -> None:
    spool, counter = _spool(tmp_path, max_bytes=1_000)
    for i in range(5):
        assert spool.put(bytes([i]) * 200, spans=10)
    held = spool.claim()  # the oldest is being sent: it cannot be dropped
    assert isinstance(held, Claim)
    assert spool.put(b"x" * 300, spans=7)
    stats = counter.snapshot()
    assert stats.spool_dropped == 20  # batches 1 and 2, not the claimed batch 0
    remaining = sorted(os.listdir(tmp_path))
    assert [spans_in(n) for n in remaining] == [10, 10, 10, 7]
    assert sum((tmp_path / n).stat().st_size for n in remaining) <= 1_000

    assert spool.put(b"y" * 1_001, spans=4)  # larger than the whole spool: it alone goes
    assert counter.snapshot().spool_dropped == 24
    assert sorted(os.listdir(tmp_path)) == remaining


def test_a_spool_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    spool, counter = _spool(tmp_path / "file" / "spool")
    assert spool.put(b"batch", spans=1) is False
    assert spool.claim() is None and not spool.has_backlog()
    assert counter.snapshot().spans_spooled == 0


def test_only_the_user_may_read_what_waits(tmp_path: Path) -> None:
    spool, _ = _spool(tmp_path / "spool")
    spool.put(b"batch", spans=1)
    if os.name == "posix":
        assert (tmp_path / "spool").stat().st_mode & 0o777 == 0o700
        (name,) = os.listdir(tmp_path / "spool")
        assert (tmp_path / "spool" / name).stat().st_mode & 0o777 == 0o600
