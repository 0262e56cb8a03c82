"""A real headless Chromium loads the pages of a running `ctxledger up`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxledger_cli.screenshots import browser, capture, running_stack

ROOT = Path(__file__).resolve().parents[2]
#: Where the screenshots of this test are kept (CI artefacts, a developer's look).
OUTPUT = ROOT / "test-output" / "dashboard"
SCREENSHOT = OUTPUT / "run-page.png"


@pytest.mark.slow
def test_chromium_shows_each_loss_once_and_the_stack_keeps_its_terminal_quiet(
    tmp_path: Path,
) -> None:
    with running_stack(tmp_path) as stack, browser() as chromium:
        assert stack.seed_004_link.startswith(stack.dashboard_url + "/run?trace_id=")
        text = capture(chromium, stack.seed_004_link, "Lost item ids (30)", SCREENSHOT)
        trace_id = stack.seed_004_link.split("trace_id=")[1].split("&")[0]
        upper = capture(
            chromium,
            f"{stack.dashboard_url}/run?trace_id={trace_id.upper()}",
            "Run of kb-agent",
            OUTPUT / "run-upper-case.png",
        )
        malformed = capture(
            chromium,
            f"{stack.dashboard_url}/run?trace_id=xyz",
            "is not a trace id",
            OUTPUT / "run-malformed.png",
        )
        overview = capture(
            chromium,
            f"{stack.dashboard_url}/overview",
            "any losing verdict",
            OUTPUT / "overview.png",
        )
        runs = capture(chromium, f"{stack.dashboard_url}/run", "Or pick a run", OUTPUT / "runs.png")
    assert "Run of kb-agent" in text
    assert "search_knowledge" in text and "lost 30 of 50 items" in text
    assert "silent" in text
    assert "kb-020" in text and "kb-049" in text
    assert "First lost here" in text  # step 2; step 3 (still missing) stays folded
    assert "Link to this step" in text and "None" not in text
    assert SCREENSHOT.stat().st_size > 10_000
    assert "Run of kb-agent" in upper
    assert "The collector is unreachable" not in malformed
    # /overview is the Incidents page: each lost result once, the runs of every losing verdict.
    assert "Page not found" not in overview
    assert "Lost results" in overview and "any losing verdict" in overview
    # The runs table is drawn on a canvas: its cells are checked by AppTest, here that it is there.
    assert "Runs" in runs and "Recent runs, newest first" in runs
    # Alerts go to a file, not the terminal; `up` says where in one line.
    assert not any("ctxledger_alert" in line for line in stack.output)
    assert sum("Alerts:" in line for line in stack.output) == 1
    alert_log = tmp_path / "ctxledger-alerts.jsonl"
    assert '"ctxledger_alert"' in alert_log.read_text(encoding="utf-8")
    # Ctrl-C stopped both children and said so.
    assert stack.process.returncode == 0
    assert any("stopping the dashboard and the collector" in line for line in stack.output)
    assert (tmp_path / "ctxledger.db").exists()  # embedded SQLite in the working folder
