"""One export of 40,000 or 100,000 spans (the collector's limit a request) through the
stock OTLP/HTTP exporter to `ctxledger serve`, on SQLite and PostgreSQL, with and without
SIGTERM in the middle (a second collector takes over on the same port and database):
what the exporter was answered, and the span ids sent, stored and missing.

Run from the repository root (PostgreSQL on 127.0.0.1:5432, as the tests use it)::

    .venv/bin/python bench/large_export.py            # all eight cases, ~6 min
    .venv/bin/python bench/large_export.py --only sqlite

The request time limit is 2 s here (30 s by default), far shorter than each export takes
to store, so every case goes the way a large export goes: kept whole in the ingest spool
past the limit, answered 200, stored by the replayer. It prints numbers; the two cases of
tests/reliability/test_large_export.py assert them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "sdk"), str(REPO / "collector"), str(REPO / "cli")]

from tests.reliability.large_export_kit import SIZES, run_large_export  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    args = parser.parse_args()
    dialects = [args.only] if args.only else ["sqlite", "postgresql"]
    print(f"{'database':<11} {'spans':>7} {'SIGTERM':>7} {'exporter':>8} {'sent':>7} "
          f"{'stored':>7} {'missing':>7} {'seconds':>7}")  # fmt: skip
    worst = 0
    for dialect in dialects:
        for size in SIZES:
            for sigterm in (False, True):
                with tempfile.TemporaryDirectory() as folder:
                    export = run_large_export(Path(folder), dialect, size, sigterm)
                missing = len(export.sent - export.stored)
                worst = max(worst, missing)
                print(
                    f"{dialect:<11} {size:>7} {'yes' if sigterm else 'no':>7} "
                    f"{export.exporter_result:>8} {len(export.sent):>7,} "
                    f"{len(export.stored & export.sent):>7,} {missing:>7,} "
                    f"{export.seconds_to_stored:>7.1f}",
                    flush=True,
                )
    print(f"acknowledged and never stored, worst case: {worst:,} spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
