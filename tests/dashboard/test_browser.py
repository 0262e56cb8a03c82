"""A real headless Chromium loads the Run page of a running `ctxledger up`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxledger_cli.screenshots import browser, capture, running_stack

ROOT = Path(__file__).resolve().parents[2]
#: Where the screenshot of this test is kept (CI artefacts, a developer's look).
SCREENSHOT = ROOT / "test-output" / "dashboard" / "run-page.png"


@pytest.mark.slow
def test_chromium_shows_the_silent_loss_on_the_run_page(tmp_path: Path) -> None:
    with running_stack(tmp_path) as stack, browser() as chromium:
        assert stack.seed_004_link.startswith(stack.dashboard_url + "/run?trace_id=")
        text = capture(chromium, stack.seed_004_link, "Lost item ids (30)", SCREENSHOT)
    assert "Run of kb-agent" in text
    assert "search_knowledge" in text and "lost 30 of 50 items" in text
    assert "silent" in text
    assert "kb-020" in text and "kb-049" in text
    assert SCREENSHOT.stat().st_size > 10_000
    # Ctrl-C stopped both children and said so.
    assert stack.process.returncode == 0
    assert any("stopping the dashboard and the collector" in line for line in stack.output)
    assert (tmp_path / "ctxledger.db").exists()  # embedded SQLite in the working folder
