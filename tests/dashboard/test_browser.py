"""A real headless Chromium loads the pages of a running `ctxledger up`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxledger_cli.screenshots import (
    MODEL_SERVER_CALL,
    _wait_until_drawn,
    browser,
    capture,
    journey_link,
    running_stack,
)
from tests.e2e.helpers import dashboard_process

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
        server = capture(
            chromium,
            journey_link(stack, MODEL_SERVER_CALL),
            "Fell out at the server",
            OUTPUT / "run-model-server.png",
        )
        trace_cells = _drawn_link_cells(chromium, stack.dashboard_url, "run (trace id)")
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
    # The model server's layer: tokens sent against read, the result that fell out, the fix.
    assert "Run of ollama-window-agent" in server
    assert "The model server read" in server and "tokens sent" in server
    assert f"query_orders · {MODEL_SERVER_CALL}: dropped" in server
    assert "num_ctx" in server
    # Each run's trace id is drawn whole: as wide as the text is in the table's font.
    assert len(trace_cells) == 5  # the demo's runs with a losing journey
    for cell in trace_cells:
        assert len(cell["text"]) == 32, cell
        assert cell["drawn"] >= cell["whole"] - 3, cell
    # Alerts go to a file, not the terminal; `up` says where in one line.
    assert not any("ctxledger_alert" in line for line in stack.output)
    assert sum("Alerts:" in line for line in stack.output) == 1
    alert_log = tmp_path / "ctxledger-alerts.jsonl"
    assert '"ctxledger_alert"' in alert_log.read_text(encoding="utf-8")
    # Ctrl-C stopped both children and said so.
    assert stack.process.returncode == 0
    assert any("stopping the dashboard and the collector" in line for line in stack.output)
    assert (tmp_path / "ctxledger.db").exists()  # embedded SQLite in the working folder


#: For each row of the table whose column ``header`` holds links: the link text the cell
#: shows (the trace id from the cell's URL), the width its link-coloured pixels cover on
#: the canvas, and the width of the whole text in the table's font.
_LINK_CELLS_JS = """
(header) => {
  for (const grid of document.querySelectorAll('[data-testid=stDataFrame]')) {
    const column = [...grid.querySelectorAll('thead th')].map(t => t.textContent).indexOf(header);
    if (column < 0) continue;
    const canvas = grid.querySelector('canvas[data-testid=data-grid-canvas]');
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const style = getComputedStyle(grid.querySelector('.stDataFrameGlideDataEditor'));
    const font = document.createElement('canvas').getContext('2d');
    font.font = style.getPropertyValue('--gdg-base-font-style') + ' ' +
      style.getPropertyValue('--gdg-font-family');
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const row = 35 * scale;  // Streamlit's row height, the header's too
    return [...grid.querySelectorAll('tbody tr')].map((tr, i) => {
      const text = tr.querySelectorAll('td')[column].textContent.match(/trace_id=([0-9a-f]+)/)[1];
      let left = Infinity, right = -1;
      for (let y = Math.round(row * (i + 1)); y < Math.round(row * (i + 2)); y++) {
        for (let x = 0; x < canvas.width; x++) {
          const k = (y * canvas.width + x) * 4;
          const [r, g, b] = [pixels[k], pixels[k + 1], pixels[k + 2]];
          if (b > 120 && b - r > 70 && b - g > 40) {  // the link colour, #244FB4
            left = Math.min(left, x);
            right = Math.max(right, x);
          }
        }
      }
      return {text, drawn: (right - left + 1) / scale, whole: font.measureText(text).width};
    });
  }
  return [];
}
"""


def _drawn_link_cells(chromium: Any, dashboard_url: str, header: str) -> list[dict[str, Any]]:
    page = chromium.new_page(viewport={"width": 1440, "height": 2400})
    try:
        page.goto(dashboard_url + "/")
        page.locator("text=any losing verdict >> visible=true").first.wait_for(timeout=60_000)
        _wait_until_drawn(page)
        page.wait_for_timeout(1500)  # let the table draw
        page.screenshot(path=str(OUTPUT / "incidents-trace-ids.png"))
        cells: list[dict[str, Any]] = page.evaluate(_LINK_CELLS_JS, header)
        return cells
    finally:
        page.close()


@pytest.mark.slow
def test_chromium_incidents_page_says_a_hung_collector_is_unreachable(
    hung_collector: str, tmp_path: Path
) -> None:
    """A stopped collector process takes connections and never answers: the Incidents
    page says it is unreachable and where, rather than loading on."""
    with dashboard_process(hung_collector, tmp_path) as url, browser() as chromium:
        text = capture(
            chromium, url + "/", "The collector is unreachable", OUTPUT / "incidents-hung.png"
        )
    assert f"the collector at {hung_collector} did not answer within 3 s" in text
    assert "ctxledger serve" in text
    assert "Lost results" not in text
