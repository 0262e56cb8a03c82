"""Real Claude Code (npm ``@anthropic-ai/claude-code`` 2.1.332, installed by the test into a
cached ``node_modules``) in print mode against the provider stand-in, exporting its own
telemetry over OTLP (logs and traces) to a real collector, as a new user would set it
up: its log events are stored by their ids, and each tool result is judged from its
spans and its request bodies, no SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from ctxledger import semconv as sc
from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.collector.live_collector import LiveCollector

from .cached_installs import installed_node_modules
from .claude_code_telemetry import telemetry_env
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "claude_code"
DASHBOARD = REPO_ROOT / "dashboard" / "ctxledger_dashboard" / "streamlit_app.py"
MCP_TOOL = "mcp__records__fetch"
CALL_ID = "toolu_ctxledger_e2e_01"
OUTPUT = "\n".join(str(n) for n in range(1, 3001))  # what `seq 1 3000` prints


def _binary(modules: Path) -> Path:
    """The platform package's binary (the package's own ``bin`` is made by an install
    script, which the cached install does not run)."""
    found = sorted(modules.glob("@anthropic-ai/claude-code-linux-*/claude"))
    glibc = [path for path in found if "musl" not in path.parent.name]
    if not glibc:
        pytest.skip(f"no Claude Code binary for this platform in {modules}")
    return glibc[0]


@pytest.fixture(scope="module")
def claude() -> Path:
    return _binary(installed_node_modules(PROJECT))


@dataclass
class Session:
    """What one ``claude -p`` run left in the collector: each call's reports (one per
    request that carried its result, or one without a request) and the log records."""

    stdout: str
    reports: dict[str, list[dict[str, Any]]]
    log_rows: list[Any]


def _run(
    claude: Path,
    tmp_path: Path,
    script: list[ToolCall | str],
    options: tuple[str, ...] = ("--allowedTools", "Bash"),
    collector_settings: dict[str, Any] | None = None,
    while_running: Callable[[LiveCollector], None] | None = None,
    stand_in: dict[str, Any] | None = None,
    **env: str,
) -> Session:
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    home = tmp_path / "home"
    home.mkdir(parents=True)
    calls = [step.id for step in script if isinstance(step, ToolCall)]
    with (
        LiveCollector(
            Settings(database_url=url, auto_migrate=True, **(collector_settings or {}))
        ) as collector,
        ProviderStandIn(script=script, **(stand_in or {})) as provider,
    ):
        done = subprocess.run(
            [str(claude), "-p", "Run the tools and tell me what they printed.",
             *options, "--model", "claude-sonnet-4-6"],
            cwd=home, env={**telemetry_env(collector.url, provider.url, home), **env},
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        reports = {str(call): _reports(collector, str(call)) for call in calls}
        if while_running is not None:
            while_running(collector)
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = list(connection.execute(select(LOG_RECORDS)))
    engine.dispose()
    return Session(done.stdout, reports, rows)


def _reports(collector: LiveCollector, call_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{collector.url}/api/v1/reports", params={"tool_call_id": call_id})
    reports: list[dict[str, Any]] = answer.json()["reports"]
    return reports


def _bash(command: str, call_id: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "Run"}, call_id)


def _verdicts(reports: list[dict[str, Any]]) -> list[str]:
    """A call's verdicts, request by request (the journey without a request last)."""
    ordered = sorted(reports, key=lambda r: (r["request_id"] is None, r.get("step") or 0))
    return [r["verdict"] for r in ordered]


@pytest.mark.slow
def test_a_whole_bash_result_is_intact_from_claude_codes_own_telemetry(
    claude: Path, tmp_path: Path
) -> None:
    """The tool's output on its span, the request that carried it in a log event: one
    journey in the session's run, the same text at both stages."""
    session = _run(claude, tmp_path, [_bash("seq 1 3000", CALL_ID), "1 to 3000."])
    (report,) = session.reports[CALL_ID]
    assert report["verdict"] == "intact", report
    assert report["source"] == "claude_code"
    # The usage Claude Code reported for the request: the server read it whole.
    assert [s["stage"] for s in report["stages"]] == ["original", "llm_input", "received"]
    by_event: dict[str, list[Any]] = {}
    for row in session.log_rows:
        by_event.setdefault(row.event_name, []).append(row)
    (result,) = by_event["claude_code.tool_result"]
    assert result.call_id == CALL_ID
    assert json.loads(result.numbers)["tool_result_size_bytes"] == len(OUTPUT.encode())
    # Two requests: the question, then the question with the tool's result.
    assert len(by_event["claude_code.api_request_body"]) == 2
    assert len(by_event["claude_code.api_request"]) == 2
    sessions = {row.session_id for row in session.log_rows}
    assert len(sessions) == 1 and None not in sessions
    assert report["trace_id"] == next(iter(sessions)).replace("-", "")


@pytest.mark.slow
def test_a_persisted_output_preview_is_declared(claude: Path, tmp_path: Path) -> None:
    """Claude Code saves a long Bash output to a file and sends the model a 2 KB preview
    that says so: declared, with the preview's size as what was kept."""
    session = _run(claude, tmp_path, [_bash("seq 1 30000", CALL_ID), "1 to 30000."])
    (report,) = session.reports[CALL_ID]
    assert report["verdict"] == "declared", report
    sent = [s for s in report["stages"] if s["stage"] == "llm_input"]
    assert sent and sent[0]["chars"] < 3_000
    assert "persisted_output" in sent[0]["markers_found"]


@pytest.mark.slow
def test_a_request_body_cut_at_60_kb_is_judged_as_far_as_it_goes(
    claude: Path, tmp_path: Path
) -> None:
    """Two results of 28 KB: the third request's body is over the 60 KB Claude Code logs
    inline. The first result, inside the prefix, is judged; the second, beyond it, is
    unauditable with the setting named. Raising it makes both judged."""
    first, second = f"{CALL_ID}_a", f"{CALL_ID}_b"
    script: list[ToolCall | str] = [
        _bash("seq 1 5800", first),
        _bash("seq 2 5801", second),
        "Done.",
    ]
    cut = _run(claude, tmp_path / "cut", script)
    assert _verdicts(cut.reports[first]) == ["intact", "intact"], json.dumps(
        cut.reports[first], indent=1
    )
    verdicts = _verdicts(cut.reports[second])
    assert verdicts == ["unauditable"], cut.reports[second]
    notes = " ".join(cut.reports[second][0]["notes"])
    assert "CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH" in notes, notes

    whole = _run(claude, tmp_path / "whole", script, CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH="400000")
    assert _verdicts(whole.reports[first]) == ["intact", "intact"], whole.reports[first]
    assert _verdicts(whole.reports[second]) == ["intact"], whole.reports[second]


@pytest.mark.slow
def test_request_bodies_in_files_are_read_only_from_the_directories_named(
    claude: Path, tmp_path: Path
) -> None:
    """``OTEL_LOG_RAW_API_BODIES=file:DIR``: each body whole in a file, its event naming
    it. A collector told to read DIR judges every result; one not told says which
    setting to give, never a loss."""
    bodies = tmp_path / "bodies"
    bodies.mkdir()
    first, second = f"{CALL_ID}_a", f"{CALL_ID}_b"
    script: list[ToolCall | str] = [
        _bash("seq 1 5800", first),
        _bash("seq 2 5801", second),
        "Done.",
    ]
    env = {"OTEL_LOG_RAW_API_BODIES": f"file:{bodies}"}
    read = _run(
        claude,
        tmp_path / "read",
        script,
        collector_settings={"read_bodies_from": [str(bodies)]},
        **env,
    )
    assert _verdicts(read.reports[first]) == ["intact", "intact"], read.reports[first]
    assert _verdicts(read.reports[second]) == ["intact"], read.reports[second]

    unread = _run(claude, tmp_path / "unread", script, **env)
    for call in (first, second):
        assert {r["verdict"] for r in unread.reports[call]} == {"unauditable"}, unread.reports[call]
        notes = " ".join(n for r in unread.reports[call] for n in r["notes"])
        assert "--read-bodies-from" in notes, notes


def _mcp_options(hook_limit: int | None) -> tuple[str, ...]:
    """Claude Code with the records MCP server (2,000 records, 25,999 chars), and a
    PostToolUse hook that silently keeps the first ``hook_limit`` chars of its output."""
    server = {"command": sys.executable, "args": [str(PROJECT / "records_mcp_server.py"), "2000"]}
    options = ["--mcp-config", json.dumps({"mcpServers": {"records": server}})]
    options += ["--allowedTools", MCP_TOOL]
    if hook_limit is not None:
        hook = f"{sys.executable} {PROJECT / 'cut_mcp_output_hook.py'} {hook_limit}"
        hooks = {
            "PostToolUse": [{"matcher": MCP_TOOL, "hooks": [{"type": "command", "command": hook}]}]
        }
        options += ["--settings", json.dumps({"hooks": hooks})]
    return tuple(options)


@pytest.mark.slow
def test_an_mcp_result_a_hook_cut_without_a_word_is_silent(claude: Path, tmp_path: Path) -> None:
    """The MCP server's 26 KB reach Claude Code whole (its tool.output event); a
    PostToolUse hook replaces them by their first 2,048 chars (updatedMCPToolOutput) with
    no sign for the model: silent, the chars lost counted. Without the hook: intact."""
    script: list[ToolCall | str] = [ToolCall(MCP_TOOL, {}, CALL_ID), "Done."]
    whole = _run(claude, tmp_path / "whole", script, _mcp_options(None))
    (report,) = whole.reports[CALL_ID]
    assert report["verdict"] == "intact", report
    assert report["tool_name"] == MCP_TOOL

    cut = _run(claude, tmp_path / "cut", script, _mcp_options(2_048))
    (report,) = cut.reports[CALL_ID]
    assert report["verdict"] == "silent", report
    assert report["layer"].startswith("between the tool and the request"), report
    assert 23_000 < report["lost_chars"] < 24_000, report


def _run_page_of(
    call_id: str, monkeypatch: pytest.MonkeyPatch, pages: list[AppTest]
) -> Callable[[LiveCollector], None]:
    """What to do while the collector runs: open the Run page of the call's session in
    AppTest and keep it in ``pages``."""

    def look(collector: LiveCollector) -> None:
        (report, *_) = _reports(collector, call_id)
        monkeypatch.setenv("CTXLEDGER_API_URL", collector.url)
        app = AppTest.from_file(str(DASHBOARD), default_timeout=60)
        app.switch_page("app_pages/run.py")
        app.query_params["trace_id"] = report["trace_id"]
        app.run()
        pages.append(app)

    return look


@pytest.mark.slow
def test_the_dashboard_shows_a_claude_code_session_as_a_run(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session, three results: a whole Bash output, a spilled one, an MCP result a
    hook cut. The Run page shows the session as a run of claude-code, each result under
    the name the model called, the spill declared with its marker, the cut silent, and
    not the llm_request spans' requests, which the request bodies show."""
    options = _mcp_options(2_048)
    options = (*options[:3], "Bash " + MCP_TOOL, *options[4:])  # Bash too
    script: list[ToolCall | str] = [
        _bash("seq 1 3000", f"{CALL_ID}_whole"),
        _bash("seq 1 30000", f"{CALL_ID}_spilled"),
        ToolCall(MCP_TOOL, {}, f"{CALL_ID}_mcp"),
        "Done.",
    ]
    pages: list[AppTest] = []
    look = _run_page_of(f"{CALL_ID}_mcp", monkeypatch, pages)
    session = _run(claude, tmp_path, script, options, while_running=look)
    assert [r["verdict"] for r in session.reports[f"{CALL_ID}_mcp"]] == ["silent"]
    (app,) = pages
    assert not app.exception, [e.value for e in app.exception]
    assert [t.value for t in app.title] == ["Run of claude-code"]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["silent journeys"] == "1" and metrics["declared journeys"] == "2"
    text = " ".join(m.value for m in app.markdown)
    assert f"`{MCP_TOOL}` · `{CALL_ID}_mcp`" in text and f"`Bash` · `{CALL_ID}_whole`" in text
    assert sc.CLAUDE_CODE_SPAN_REQUEST_PREFIX not in text
    assert any("llm_request spans carry no messages" in c.value for c in app.caption)
    tables = [t.value for t in app.dataframe]
    assert any("persisted_output" in list(t["marker"]) for t in tables if "marker" in t)


@pytest.mark.slow
def test_a_compaction_declares_each_result_its_summary_replaced(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in counts every request 6.6 times over, so after two Bash results the
    session passes Claude Code's auto-compact threshold: it has the conversation
    summarized (requests of its own), then goes on with the summary and the call in
    flight. The first result is declared in the first request after the compaction, the
    summary standing for it; intact where it was carried; the second, kept, intact. The
    Run page says Claude Code compacted the conversation and what it replaced."""
    first, second = f"{CALL_ID}_a", f"{CALL_ID}_b"
    script: list[ToolCall | str] = [
        _bash("seq 1 3000", first),
        _bash("seq 1 2000", second),
        "Summary of the work.",
        "Done.",
        "Done again.",
    ]
    pages: list[AppTest] = []
    look = _run_page_of(first, monkeypatch, pages)
    session = _run(claude, tmp_path, script, while_running=look, stand_in={"count_scale": 6.6})
    (event,) = [r for r in session.log_rows if r.event_name == "claude_code.compaction"]
    tokens = json.loads(event.numbers)
    assert tokens["pre_tokens"] > 167_000 > tokens["post_tokens"], tokens

    declared = [r for r in session.reports[first] if r["verdict"] == "declared"]
    carried = [r for r in session.reports[first] if r["verdict"] == "intact"]
    assert len(declared) == 1 and carried, session.reports[first]
    (removed,) = declared
    assert [s["stage"] for s in removed["stages"]] == ["original", "compacted"], removed
    assert removed["stages"][-1]["strategy"] == "compaction"
    assert removed["lost_chars"] == len("\n".join(str(n) for n in range(1, 3001)))
    assert removed["layer_name"] == "request"
    assert any("Claude Code's summary" in note for note in removed["notes"]), removed["notes"]
    assert {r["verdict"] for r in session.reports[second]} == {"intact"}
    assert removed["request_id"] in {r["request_id"] for r in session.reports[second]}

    (app,) = pages
    assert not app.exception, [e.value for e in app.exception]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["declared journeys"] == "1", metrics
    (notice,) = [i.value for i in app.info if "after a compaction" in i.value]
    assert "Claude Code's summary" in notice and f"`{first}`" in notice, notice
    assert f"`{second}`" not in notice
