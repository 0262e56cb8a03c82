"""``ctxledger demo --endpoint``'s verdict table names the step where each result was first
lost, as the collector's API says (the step of the journey for an intact result)."""

from __future__ import annotations

import re
from pathlib import Path

from ctxledger_cli.query_api import fetch_reports
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.e2e.helpers import run_python

ROW = re.compile(r"  (\w+) +(\w+) +\S+\[(\S+)\] step (\d+) ")
ROOT = Path(__file__).resolve().parents[2]
#: The documents that show the verdict table as ``ctxledger up`` prints it.
SAMPLES = (ROOT / "README.md", ROOT / "docs" / "collector.md")


def _rows(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if ROW.match(line)]


def test_every_verdict_line_names_the_step_where_its_result_was_first_lost(
    tmp_path: Path,
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ctxledger.db'}", auto_migrate=True)
    with LiveCollector(settings) as collector:
        demo = run_python("-m", "ctxledger_cli", "demo", "--endpoint", collector.url)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        rows = [m for line in demo.stdout.splitlines() if (m := ROW.match(line))]
        assert len(rows) == 10, demo.stdout
        printed = {m.group(3): (m.group(2), int(m.group(4))) for m in rows}
        answered: dict[str, tuple[str, int]] = {}
        for call_id, (verdict, _) in printed.items():
            journeys = [r for r in fetch_reports(collector.url, call_id) if r["verdict"] == verdict]
            first = {r["first_lost_step"] for r in journeys} - {None}
            # The journeys of one lost result agree where it was first lost.
            step = first.pop() if first else min(r["step"] for r in journeys)
            assert not first, journeys
            answered[call_id] = (verdict, step)
    assert printed == answered
    # Seed 004 cut the search result at step 2; step 3 re-sent it still missing.
    assert printed["call_search_1"] == ("silent", 2)
    for sample in SAMPLES:
        assert _rows(sample.read_text(encoding="utf-8")) == _rows(demo.stdout), sample
