"""Gzip bombs: what rejected bodies leave in the collector's memory.

Run from the repository root::

    .venv/bin/python bench/gzip_bombs.py                       # ~1 min
    .venv/bin/python bench/gzip_bombs.py --old-root /tmp/old   # also a checkout of older code

``ctxledger serve`` runs as a subprocess on SQLite in a temporary directory. A bomb is
a 1 MiB gzip body that inflates to 1 GiB of zeros. Two rounds, each on a fresh
collector:

* **in a row**: ``--bombs`` bombs, one after the other, over real HTTP;
* **with normal load**: the same bombs from one thread while another exports real spans
  with the stock ``OTLPSpanExporter`` (it retries 503 itself); afterwards the stored
  spans are compared with those sent, by natural key (trace, tool call, stage).

RSS is read from ``/proc/<pid>/status``: VmRSS before the bombs (after a warm-up export)
and once the collector is idle after them, VmHWM (the kernel's high-water mark) for the
peak. ``--old-root`` points at another checkout (``git worktree add /tmp/old <commit>``)
whose ``sdk``, ``collector`` and ``cli`` folders the collector then imports instead, for
a before figure. This is a benchmark: it prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchkit import collector_metrics, verify, workload
from benchkit.collector_process import RunningCollector, collector
from benchkit.databases import fresh_sqlite
from benchkit.exporting import batches_of, feed, quiet_exporter_logs
from benchkit.process_memory import tree_peak_kib, tree_rss_kib
from benchkit.tables import mib, print_table

PROTOBUF = "application/x-protobuf"
SETTLE_S = 2.0  # idle RSS is read after the collector has had this long to be idle


def gzip_bomb(inflated_mib: int) -> bytes:
    """``inflated_mib`` MiB of zeros, gzip-compressed (about 1 KiB per MiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    parts = [compressor.compress(zeros) for _ in range(inflated_mib)]
    parts.append(compressor.flush())
    return b"".join(parts)


def send_bomb(running: RunningCollector, bomb: bytes) -> tuple[int, str]:
    """POST one bomb; its status and the start of its answer."""
    host, port = running.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request(
            "POST",
            "/v1/traces",
            body=bomb,
            headers={"Content-Type": PROTOBUF, "Content-Encoding": "gzip"},
        )
        answer = connection.getresponse()
        return answer.status, answer.read()[:200].decode(errors="replace")
    finally:
        connection.close()


@dataclass(frozen=True)
class Round:
    name: str
    code: str
    rss_before_kib: int
    peak_kib: int
    rss_after_kib: int
    statuses: Counter[int]
    spans_sent: int
    spans_stored: int
    load_answers: dict[str, int]
    seconds: float


def run_round(
    name: str, code: str, bombs: int, normal_spans: int, workdir: Path, env: dict[str, str]
) -> Round:
    load = workload.build(normal_spans + 200, 200).spans[:normal_spans] if normal_spans else []
    warm_up = workload.build(1_000, 200, seed=7).spans
    bomb = gzip_bomb(1024)
    statuses: Counter[int] = Counter()
    tag = f"{name}-{code}".replace(" ", "-").replace("/", "_")
    with (
        fresh_sqlite(workdir, tag) as url,
        collector(url, workdir / f"serve-{tag}.log", env) as running,
    ):
        # One ordinary export first, so the "before" includes what serving costs anyway.
        feed(running.traces_endpoint, batches_of(warm_up, 512), 1)
        time.sleep(SETTLE_S)
        before = tree_rss_kib(running.pid)
        started = time.perf_counter()

        def bombard() -> None:
            for _ in range(bombs):
                status, _text = send_bomb(running, bomb)
                statuses[status] += 1

        bomber = threading.Thread(target=bombard, daemon=True)
        bomber.start()
        answers: dict[str, int] = {}
        if load:
            answers = feed(running.traces_endpoint, batches_of(load, 512), 1, 30.0).statuses()
        bomber.join()
        seconds = time.perf_counter() - started
        collector_metrics.wait_until_idle(running.base_url)
        time.sleep(SETTLE_S)
        after = tree_rss_kib(running.pid)
        peak = tree_peak_kib(running.pid)
        stored = verify.stored_keys(url)[0]
    sent = {workload.natural_key(span) for span in load}
    return Round(
        name, code, before, peak, after, statuses, len(sent), len(stored & sent), answers, seconds
    )


def code_env(root: Path | None) -> dict[str, str]:
    """The collector's environment: the ``CTXLEDGER_*`` defaults, and for ``root`` that
    checkout's packages ahead of this one's."""
    if root is None:
        return {}
    paths = [str(root / "sdk"), str(root / "collector"), str(root / "cli")]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def main(argv: Sequence[str] | None = None) -> int:
    quiet_exporter_logs()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bombs", type=int, default=100)
    parser.add_argument("--normal-spans", type=int, default=20_000, help="the load round's")
    parser.add_argument("--old-root", type=Path, default=None, help="a checkout of older code")
    args = parser.parse_args(argv)
    codes: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.old_root is not None:
        codes.append((f"{args.old_root}", args.old_root.resolve()))
    workdir = Path(tempfile.mkdtemp(prefix="ctxledger-gzip-bombs-"))
    rounds: list[Round] = []
    try:
        for code, root in codes:
            for name, normal in (("in a row", 0), ("with normal load", args.normal_spans)):
                done = run_round(name, code, args.bombs, normal, workdir, code_env(root))
                rounds.append(done)
                print(f"  {code:<12} {name:<17} done in {done.seconds:.1f} s", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print_table(
        (
            "code",
            "round",
            "answers to the bombs",
            "RSS before",
            "peak RSS (VmHWM)",
            "idle RSS after",
            "after - before",
            "normal spans stored / sent",
            "answers to the normal exports",
        ),
        [
            (
                r.code,
                r.name,
                ", ".join(f"{status} x{count}" for status, count in sorted(r.statuses.items())),
                mib(r.rss_before_kib),
                mib(r.peak_kib),
                mib(r.rss_after_kib),
                f"{(r.rss_after_kib - r.rss_before_kib) / 1024:+,.0f} MiB",
                f"{r.spans_stored:,} / {r.spans_sent:,}" if r.spans_sent else "-",
                ", ".join(f"{k} x{v}" for k, v in r.load_answers.items()) or "-",
            )
            for r in rounds
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
