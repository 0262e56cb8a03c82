"""Screenshots of the dashboard in a real headless Chromium, driven by Playwright.

``python -m ctxledger_cli.screenshots --out docs/screenshots`` starts ``ctxledger up``
on spare ports (SQLite in a temporary folder, with the demo incidents), opens every page
and saves one PNG per page, one of the run whose result the model server discarded, and
one of the collector's API docs (``/docs``) drawn with no network but loopback. The
browser tests use the same functions. Needs Debian's ``chromium`` (or ``--chromium
PATH``) and the ``playwright`` package (no browser download).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RunningStack:
    process: subprocess.Popen[str]
    collector_url: str
    dashboard_url: str
    seed_004_link: str
    output: list[str]


@contextmanager
def running_stack(workdir: Path, timeout_s: float = 180.0) -> Iterator[RunningStack]:
    """``ctxledger up`` in ``workdir`` until the demo is in; stopped with Ctrl-C after."""
    collector_port, dashboard_port = free_port(), free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxledger_cli",
            "up",
            "--port",
            str(collector_port),
            "--dashboard-port",
            str(dashboard_port),
        ],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    output: list[str] = []
    link = ""
    deadline = time.monotonic() + timeout_s
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip())
            if "Seed 004's silent loss:" in line:
                link = line.split()[-1]
            if "Press Ctrl-C" in line:  # the last line `up` prints once everything is up
                break
            if time.monotonic() > deadline:
                break
        if not link:
            raise RuntimeError("ctxledger up did not come up:\n" + "\n".join(output[-40:]))
        yield RunningStack(
            process,
            f"http://127.0.0.1:{collector_port}",
            f"http://127.0.0.1:{dashboard_port}",
            link,
            output,
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                rest, _ = process.communicate(timeout=30)
                output.extend(rest.splitlines())
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


@contextmanager
def browser(chromium: str = "/usr/bin/chromium") -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(chromium).exists():
        raise FileNotFoundError(
            f"no Chromium at {chromium}: install Debian's package (apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def _wait_until_drawn(page: Any, timeout_ms: int = 30_000) -> None:
    """Until no placeholder of an element still being drawn is left (on a busy machine the
    page shows them for seconds); a page that never settles is captured as it is."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with suppress(PlaywrightTimeout):
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout_ms
        )


def capture(
    chromium_browser: Any, url: str, wait_for_text: str, path: Path, height: int = 2400
) -> str:
    """Open ``url``, wait until ``wait_for_text`` is visible, save a PNG; return the text
    of the page."""
    page = chromium_browser.new_page(viewport={"width": 1440, "height": height})
    try:
        page.goto(url)
        page.locator(f"text={wait_for_text} >> visible=true").first.wait_for(timeout=60_000)
        _wait_until_drawn(page)
        page.wait_for_timeout(1500)  # let the charts draw
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
        text: str = page.locator("body").inner_text()
        return text
    finally:
        page.close()


LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def loopback_only(page: Any) -> list[str]:
    """Abort every request of ``page`` for a host other than loopback, as on a machine
    with no network (the CDNs FastAPI's default pages load from among them); returns the
    list, filled as it goes, of the URLs refused."""
    from urllib.parse import urlsplit

    refused: list[str] = []

    def route(request_route: Any) -> None:
        url: str = request_route.request.url
        if urlsplit(url).hostname in LOOPBACK:
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort("internetdisconnected")

    page.route("**/*", route)
    return refused


@dataclass
class DrawnApiDocs:
    """The collector's ``/docs`` as Chromium drew it: the open page (the caller closes it),
    the URLs refused for leaving loopback, and the requests that failed."""

    page: Any
    refused: list[str]
    failed: list[str]


def capture_api_docs(chromium_browser: Any, collector_url: str, path: Path | None) -> DrawnApiDocs:
    """Open the collector's ``/docs`` with no network but loopback, wait until Swagger UI
    drew the operations, and save a PNG (unless ``path`` is None)."""
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 2000})
    drawn = DrawnApiDocs(page, loopback_only(page), [])
    page.on("requestfailed", lambda request: drawn.failed.append(request.url))
    page.goto(f"{collector_url}/docs")
    traces = page.locator(".opblock-summary-path", has_text="/v1/traces").first
    traces.wait_for(state="visible", timeout=30_000)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
    return drawn


def journey_link(stack: RunningStack, tool_call_id: str) -> str:
    """The dashboard's link to the journey of ``tool_call_id`` that lost it (its first)."""
    import httpx

    reports = httpx.get(
        f"{stack.collector_url}/api/v1/reports",
        params={"tool_call_id": tool_call_id},
        timeout=30,
    ).json()["reports"]
    report = next(r for r in reports if r["verdict"] != "intact")
    return (
        f"{stack.dashboard_url}/run?trace_id={report['trace_id']}&step={report['step']}"
        f"&tool_call_id={tool_call_id}"
    )


#: The demo's call whose result the model server discarded (the ollama window incident).
MODEL_SERVER_CALL = "call_orders_window"

#: Page name -> (path and query, text that shows the page has loaded).
PAGES: dict[str, tuple[str, str]] = {
    "overview": ("/", "any losing verdict"),
    "runs": ("/run", "Or pick a run"),
    "tool": ("/tool?tool=search_knowledge", "Agents using it"),
    "alerts": ("/alerts", "Alerts"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as workdir,
        running_stack(Path(workdir)) as stack,
        browser(args.chromium) as chromium,
    ):
        capture(chromium, stack.seed_004_link, "kb-049", args.out / "run.png")
        capture(
            chromium,
            journey_link(stack, MODEL_SERVER_CALL),
            "Fell out at the server",
            args.out / "run-model-server.png",
            height=1600,
        )
        for name, (path, text) in PAGES.items():
            capture(chromium, stack.dashboard_url + path, text, args.out / f"{name}.png")
        capture_api_docs(chromium, stack.collector_url, args.out / "api-docs.png").page.close()
    print(f"screenshots written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
