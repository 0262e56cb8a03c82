"""Hostile names (HTML/JS, SQL quotes, markdown and Streamlit directives, the longest
allowed, right-to-left and zero-width characters) go through the real SDK and OTLP
ingest, are stored verbatim, filter exactly through the query API's bound parameters,
and show as plain text on the dashboard: AppTest, then a real Chromium that must run no
injected script and build no injected element."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from google.protobuf.message import Message
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.screenshots import browser
from ctxledger_collector.ops.settings import Settings
from ctxledger_dashboard.launch import dashboard_command, dashboard_environment
from tests.collector.live_collector import LiveCollector, free_port
from tests.dashboard.conftest import APP

READ_KEY = "read-key-for-hostile-names"
AGENT = '<img src=x onerror="window.__pwned=1">agent\'s "run"'
TOOLS = [
    "<script>window.__pwned=2</script>",
    "x' OR '1'='1\"; DROP TABLE reports;--",
    "**bold** [link](javascript:window.__pwned=3) :red[red] $x^2$ `tick` ```fence",
    "\u202eevil\u200b\u200d\ufefftool",
    "工具/" + "长" * 248 + "?#%00",  # 256 characters: the longest a name may be
]
CALL_IDS = [f"call<b>{i}</b>'\"`" for i in range(len(TOOLS))]
#: Bidi controls and invisible format characters, in a tool, an agent, a call id, a service.
INVISIBLE_TOOL = "safe\u202etxt.exe"  # reads "safeexe.txt" where the override takes effect
INVISIBLE_AGENT = "agent\u2067\u200f\u061c"
INVISIBLE_CALL = "call\u202a\u2066\u200e\u2060\u00ad"
INVISIBLE_SERVICE = "svc\u202b\u202c\u2068\u2069\x1b"
INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE += "\u200b\u200c\u200d\ufeff\u2060\u00ad\x1b"


def _lossy_journey(tool: str, call_id: str) -> None:
    rows = [{"id": f"row-{i}", "text": "内容"} for i in range(10)]
    ctxledger.measure(sc.STAGE_ORIGINAL, rows, tool_call_id=call_id, tool_name=tool)
    ctxledger.measure(sc.STAGE_SERIALIZED, rows[:4], tool_call_id=call_id, tool_name=tool)


@dataclass
class Stand:
    collector: LiveCollector
    trace_id: str

    def get(self, path: str, **params: Any) -> Any:
        answer = httpx.get(
            f"{self.collector.url}{path}",
            params=params,
            headers={"authorization": f"Bearer {READ_KEY}"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    database = tmp_path_factory.mktemp("hostile") / "ctxledger.db"
    settings = Settings(
        database_url=f"sqlite:///{database}", auto_migrate=True, sweep_interval_s=3600,
        read_keys=READ_KEY, alert_settle_s=0,  # the Alerts page has its groups at once
    )  # fmt: skip
    with LiveCollector(settings) as collector:
        client = ctxledger.configure(service_name="hostile", endpoint=collector.url, ledger="off")
        with ctxledger.run(AGENT):
            for tool, call_id in zip(TOOLS, CALL_IDS, strict=True):
                _lossy_journey(tool, call_id)
        with ctxledger.run("bystander"):  # a tool the SQL-looking filter must not match
            _lossy_journey("innocent", "call_innocent")
        with ctxledger.run(INVISIBLE_AGENT):
            _lossy_journey(INVISIBLE_TOOL, INVISIBLE_CALL)
        assert ctxledger.flush()
        client.shutdown()
        # A span rejected at ingest (its tool name is over the limit) from a hostile service.
        client = ctxledger.configure(
            service_name=INVISIBLE_SERVICE, endpoint=collector.url, ledger="off"
        )
        with ctxledger.run("rejected"):
            _lossy_journey("长" * 257, "call_rejected")
        assert ctxledger.flush()
        client.shutdown()
        ctxledger.configure(service_name="idle", export=False, ledger="off")
        stand = Stand(collector, "")
        (run,) = stand.get("/api/v1/runs", agent=AGENT)["runs"]
        stand.trace_id = run["trace_id"]
        yield stand


def test_names_are_stored_verbatim_and_filter_exactly(stand: Stand) -> None:
    run = stand.get(f"/api/v1/runs/{stand.trace_id}")
    assert run["agent_name"] == AGENT
    journeys = [j for s in run["steps"] for r in s["requests"] for j in r["journeys"]]
    assert sorted((j["tool_name"], j["tool_call_id"]) for j in journeys) == sorted(
        zip(TOOLS, CALL_IDS, strict=True)
    )
    for tool, call_id in zip(TOOLS, CALL_IDS, strict=True):
        reports = stand.get("/api/v1/reports", tool=tool)["reports"]
        assert [(r["tool_name"], r["tool_call_id"]) for r in reports] == [(tool, call_id)]
        assert stand.get("/api/v1/reports", tool_call_id=call_id)["total"] == 1
        profile = stand.get(f"/api/v1/tools/{quote(tool, safe='')}")
        assert profile["tool"] == tool
    assert stand.get("/api/v1/reports", tool="x' OR '1'='1")["total"] == 0
    assert stand.get("/api/v1/reports", agent="bystander")["total"] == 1  # nothing dropped


def test_a_name_over_the_limit_is_rejected_with_a_reason_not_cut(stand: Stand) -> None:
    client = ctxledger.configure(service_name="hostile", endpoint=stand.collector.url, ledger="off")
    with ctxledger.run("too-long"):
        _lossy_journey("长" * 257, "call_too_long")
    assert ctxledger.flush()
    client.shutdown()
    ctxledger.configure(service_name="idle", export=False, ledger="off")
    assert stand.get("/api/v1/reports", tool_call_id="call_too_long")["total"] == 0


def _app(page: str, **params: str) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(page)
    for key, value in params.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_apptest_pages_render_the_names_as_code_never_as_html(
    stand: Stand, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLEDGER_API_URL", stand.collector.url)
    monkeypatch.delenv("CTXLEDGER_READ_KEY", raising=False)
    anonymous = _app("app_pages/run.py", trace_id=stand.trace_id)
    assert any("needs a read key" in e.value for e in anonymous.error)
    assert not anonymous.title  # nothing of the run was shown

    monkeypatch.setenv("CTXLEDGER_READ_KEY", READ_KEY)
    run = _app("app_pages/run.py", trace_id=stand.trace_id)
    (title,) = run.title
    assert title.value.startswith("Run of \\<img src=x onerror=")
    elements = [*run.markdown, *run.caption]  # (a title has no HTML switch at all)
    assert all(not e.proto.allow_html for e in elements)
    text = "\n".join(m.value for m in run.markdown)
    assert "````**bold** [link]" in text and "```fence````" in text  # a longer fence
    tool = _app("app_pages/tool.py", tool=TOOLS[0])
    assert any("`<script>window.__pwned=2</script>`" in m.value for m in tool.markdown)


def _strings(message: Message) -> Iterator[str]:
    """Every text in a protobuf message, the text of its Arrow tables (dataframes and
    chart data) included."""
    for field, value in message.ListFields():
        if field.name == "id":  # a widget's key (a repr of its state), never shown
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            if isinstance(item, Message):
                yield from _strings(item)
            elif isinstance(item, str):
                yield item
            elif isinstance(item, bytes) and item:
                table = convert_arrow_bytes_to_pandas_df(item)
                yield from map(str, table.columns)
                yield table.to_json(
                    orient="values", force_ascii=False, date_format="iso", default_handler=str
                )


def _rendered(node: Any) -> Iterator[str]:
    """Every text of a page's elements and blocks: their text, labels, options, chart
    specs and table and chart data, as the browser is sent them."""
    proto = getattr(node, "proto", None)
    if proto is not None:
        yield from _strings(proto)
    for child in getattr(node, "children", {}).values():
        yield from _rendered(child)


def _sent(app: AppTest) -> str:
    return "\n".join(_rendered(app._tree))


def _raw_invisible(text: str) -> set[str]:
    """The invisible characters in ``text``, raw or JSON-escaped (``st.json``'s body)."""
    escaped = text.lower()
    return {c for c in INVISIBLE if c in text or f"\\u{ord(c):04x}" in escaped}


def test_apptest_pages_show_bidi_and_invisible_characters_as_visible_escapes(
    stand: Stand, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLEDGER_API_URL", stand.collector.url)
    monkeypatch.setenv("CTXLEDGER_READ_KEY", READ_KEY)
    (run,) = stand.get("/api/v1/runs", agent=INVISIBLE_AGENT)["runs"]
    pages = {
        "incidents": _app("app_pages/incidents.py", range="all-time"),
        "incidents of the tool": _app("app_pages/incidents.py", tool=INVISIBLE_TOOL),
        "tool": _app("app_pages/tool.py", tool=INVISIBLE_TOOL),
        "runs": _app("app_pages/run.py"),
        "run": _app("app_pages/run.py", trace_id=run["trace_id"]),
        "alerts": _app("app_pages/alerts.py"),
    }
    notifications = stand.get("/api/v1/alerts", limit=100)["notifications"]
    (hostile,) = (n["id"] for n in notifications if n["agent"] == INVISIBLE_AGENT)
    pages["alerts"].selectbox[-1].select(hostile).run()  # "Open a notification"
    sent = {name: _sent(app) for name, app in pages.items()}
    for name, text in sent.items():
        assert _raw_invisible(text) == set(), name
    tool, agent = "safe⟨U+202E⟩txt.exe", "agent⟨U+2067⟩⟨U+200F⟩⟨U+061C⟩"
    call = "call⟨U+202A⟩⟨U+2066⟩⟨U+200E⟩⟨U+2060⟩⟨U+00AD⟩"
    assert tool in sent["incidents"] and agent in sent["incidents"]  # charts, tables, look-first
    assert call in sent["incidents of the tool"] and tool in sent["tool"]
    assert agent in sent["runs"] and call in sent["run"] and tool in sent["run"]
    assert "svc⟨U+202B⟩⟨U+202C⟩⟨U+2068⟩⟨U+2069⟩␛" in sent["alerts"]  # the rejected span
    assert agent in sent["alerts"] and tool in sent["alerts"]  # the alert groups
    payloads = [json.loads(j.value) for j in pages["alerts"].json]  # the opened notification
    assert agent in json.dumps(payloads, ensure_ascii=False)
    assert TOOLS[4] in sent["incidents"]  # Chinese and other ordinary text is left as it is
    (title,) = pages["run"].title
    assert title.value == f"Run of {agent}"
    assert any(e.value.startswith(f"### `{tool}` ") for e in pages["tool"].markdown)


@pytest.fixture(scope="module")
def dashboard(stand: Stand) -> Iterator[str]:
    port = free_port()
    env = dashboard_environment(stand.collector.url, {**os.environ, "CTXLEDGER_READ_KEY": READ_KEY})
    process = subprocess.Popen(
        dashboard_command("127.0.0.1", port), env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_chromium_runs_no_injected_script_and_shows_the_names_as_text(
    stand: Stand, dashboard: str
) -> None:
    pages = {
        # Ready once the last journey's hostile tool name shows as text.
        f"/run?trace_id={stand.trace_id}": TOOLS[4][:20],
        "/tool?" + urlencode({"tool": TOOLS[2]}): "[link](javascript:window.__pwned=3)",
    }
    dialogs: list[str] = []
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1440, "height": 2400})

        def dismiss(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        seen: dict[str, str] = {}
        for path, ready in pages.items():
            page.goto(dashboard + path)
            page.get_by_text(ready, exact=False).first.wait_for(timeout=60_000)
            page.wait_for_timeout(500)  # an injected onerror would have fired by now
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("img[src='x']").count() == 0, path
            assert page.locator("a[href^='javascript']").count() == 0, path
            scripts = page.evaluate(
                "[...document.scripts].filter(s => s.text.includes('__pwned')).length"
            )
            assert scripts == 0, path
            seen[path] = page.locator("body").inner_text()
        page.close()
    assert dialogs == []
    run_text = seen[f"/run?trace_id={stand.trace_id}"]
    assert 'Run of <img src=x onerror="window.__pwned=1">agent\'s "run"' in run_text
    assert TOOLS[0] in run_text and TOOLS[1] in run_text
    assert "**bold** [link](javascript:window.__pwned=3) :red[red] $x^2$ `tick`" in run_text
    assert "⟨U+202E⟩evil⟨U+200B⟩⟨U+200D⟩⟨U+FEFF⟩tool" in run_text and TOOLS[4][:40] in run_text
    assert "\u202e" not in run_text
    assert json.dumps(TOOLS[2])[1:30] in json.dumps(seen["/tool?" + urlencode({"tool": TOOLS[2]})])


#: The text of the Incidents page's ranking: its chart's axis labels (Vega draws SVG) and
#: its table's cells (the grid keeps them in an accessible table behind its canvas).
_RANKING_TEXT_JS = """
() => ({
  chart: [...document.querySelectorAll('[data-testid=stVegaLiteChart] svg text')]
    .map(t => t.textContent),
  table: [...document.querySelectorAll('[data-testid=stDataFrame] tbody td')]
    .map(td => td.textContent),
})
"""


@pytest.mark.slow
def test_chromium_incidents_page_shows_a_right_to_left_override_visibly(
    stand: Stand, dashboard: str
) -> None:
    shown = "safe⟨U+202E⟩txt.exe"
    runs_agent = "agent⟨U+2067⟩⟨U+200F⟩⟨U+061C⟩"
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1440, "height": 3000})
        page.goto(dashboard + "/")
        page.get_by_text("Who loses most").first.wait_for(timeout=60_000)
        page.locator("[data-testid=stVegaLiteChart] svg text", has_text=shown).first.wait_for(
            timeout=60_000
        )
        for cell in (shown, runs_agent):  # the ranking and the runs table render apart
            page.locator("[data-testid=stDataFrame] tbody td", has_text=cell).first.wait_for(
                state="attached", timeout=60_000
            )
        drawn: dict[str, list[str]] = page.evaluate(_RANKING_TEXT_JS)
        body = page.locator("body").inner_text()
        page.close()
    assert shown in drawn["chart"], drawn["chart"]
    assert shown in drawn["table"], drawn["table"]
    assert runs_agent in drawn["table"]
    everything = body + "".join(drawn["chart"] + drawn["table"])
    assert not set(INVISIBLE) & set(everything)


def test_the_reports_command_shows_bidi_and_invisible_characters_as_visible_escapes(
    stand: Stand,
) -> None:
    """`ctxledger reports`, run as the real command: the tool and call id that hide
    characters are printed with each one escaped, and no such character reaches the
    terminal."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxledger_cli",
            "reports",
            "--endpoint",
            stand.collector.url,
            "--tool",
            INVISIBLE_TOOL,
        ],
        env={**os.environ, "CTXLEDGER_READ_KEY": READ_KEY},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    assert "safe⟨U+202E⟩txt.exe" in printed
    assert "call⟨U+202A⟩⟨U+2066⟩⟨U+200E⟩⟨U+2060⟩⟨U+00AD⟩" in printed
    assert not set(INVISIBLE) & set(printed)
    assert printed.splitlines()[-1] == "1 shown of 1 reports"


@pytest.mark.parametrize(
    "path",
    ["/api/v1/runs/{trace}", "/api/v1/reports", "/api/v1/stats/breakdown", "/api/v1/rejections"],
)
def test_json_answers_escape_invisible_characters_and_say_nosniff(stand: Stand, path: str) -> None:
    """The raw bytes of every answer hold no bidi control or invisible character (a person
    reading ``curl`` output sees ``\\u202e``), and parse to the very same names."""
    answer = httpx.get(
        stand.collector.url + path.format(trace=stand.trace_id),
        params={"limit": 500} if "{" not in path else {},
        headers={"authorization": f"Bearer {READ_KEY}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"
    raw = answer.content.decode("utf-8")
    assert not set(raw) & set(INVISIBLE.replace("\x1b", "")), path
    names = json.dumps(answer.json(), ensure_ascii=False)
    if "rejections" in path:
        assert "\\u202b" in raw  # the hostile service of the rejected span, escaped
        services = {r["service_name"] for r in answer.json()["rejections"]}
        assert INVISIBLE_SERVICE in services  # read back as it is
    else:
        assert "\\u202eevil\\u200b" in raw  # the hostile tool, escaped
        assert TOOLS[3] in names  # and read back as it is


def test_every_answer_says_nosniff(stand: Stand) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        assert httpx.get(stand.collector.url + path).headers["x-content-type-options"] == (
            "nosniff"
        ), path
    refused = httpx.post(stand.collector.url + "/v1/traces", content=b"x")
    assert refused.headers["x-content-type-options"] == "nosniff"


def test_the_alert_log_writes_invisible_characters_as_escapes(tmp_path: Any) -> None:
    from ctxledger_collector.alerts.config import LogSink
    from ctxledger_collector.alerts.sinks import send

    log = tmp_path / "alerts.jsonl"
    payload = {"tool": INVISIBLE_TOOL, "agent": INVISIBLE_AGENT, "c1": "csi\u009b[31m"}
    with httpx.Client() as http:
        send(LogSink(type="log", path=str(log)), "wh_1", payload, http)
    line = log.read_text(encoding="utf-8")
    assert not set(line) & set(INVISIBLE + "\u009b")
    assert "safe\\u202etxt.exe" in line and "csi\\u009b[31m" in line
    assert json.loads(line)["ctxledger_alert"] == payload
