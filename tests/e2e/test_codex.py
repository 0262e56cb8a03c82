"""Real OpenAI Codex CLI (npm ``@openai/codex`` 0.171.0, installed by the test into a
cached ``node_modules``; its platform binary comes from the npm registry too) in ``codex
exec`` against the provider stand-in's Responses API, exporting its own logs and traces
to a real collector (on SQLite, and on PostgreSQL), no SDK: each tool output's size is
stored from Codex's ``codex.tool_result`` span event, and what the model read of it
worked out from the usage of the requests around it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from ctxledger import semconv as sc
from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.collector.conftest import fresh_postgres_database
from tests.collector.live_collector import LiveCollector

from .codex_cli import codex_binary, run_codex

CALL_ID = "call_ctxledger_codex_01"
#: Codex's wrapper around a command's output (``Chunk ID``, ``Wall time``, exit code,
#: ``Original token count``, ``Output:`` lines), about 106 bytes.
WRAPPER = range(90, 130)


@pytest.fixture(scope="module")
def codex() -> Path:
    return codex_binary()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The collector's database: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ctxledger.db'}"
        return
    with fresh_postgres_database() as url:
        yield url


def _reports(collector: LiveCollector, call_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{collector.url}/api/v1/reports", params={"tool_call_id": call_id})
    reports: list[dict[str, Any]] = answer.json()["reports"]
    return reports


def _judged(collector: LiveCollector, call_id: str, verdict: str) -> dict[str, Any] | None:
    """The call's journey once it is judged ``verdict`` (Codex's spans and log records
    come in several exports; what the model read is known once all of them are stored),
    None if it is not within 15 s."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        reports = _reports(collector, call_id)
        assert len(reports) <= 1, reports
        if reports and reports[0]["verdict"] == verdict:
            return reports[0]
        time.sleep(0.1)
    return None


#: ``codex exec`` 0.171 exits, about one run in sixteen here, before it exports the span
#: of its turn (``session_task.turn``), which ends last; without it the turn's usage
#: cannot be checked whole, and the output stays not auditable (never judged wrong). A
#: run is tried again then, each time with its own call id.
ATTEMPTS = 3


def _run(
    codex: Path,
    tmp_path: Path,
    url: str,
    command: str,
    verdict: str,
    max_output_tokens: int | None = None,
    extra_config: str = "",
) -> tuple[dict[str, Any], list[str], Any]:
    """Codex runs ``command`` once through its shell tool (the call asking for
    ``max_output_tokens`` if given); the call's report, what the model read of the output
    (the stand-in's record of the request that carried it) and the stored log records."""
    arguments: dict[str, Any] = {"cmd": command}
    if max_output_tokens is not None:
        arguments["max_output_tokens"] = max_output_tokens
    seen: list[dict[str, Any]] = []
    for attempt in range(ATTEMPTS):
        call_id = f"{CALL_ID}_{attempt}"
        script = [ToolCall("exec_command", arguments, call_id), "It printed its output."]
        with (
            LiveCollector(Settings(database_url=url, auto_migrate=True)) as collector,
            ProviderStandIn(script=script) as provider,
        ):
            workdir = tmp_path / f"work{attempt}"
            run_codex(codex, workdir, provider.url, collector.url, extra_config)
            report = _judged(collector, call_id, verdict)
            seen += _reports(collector, call_id)
            read = [
                item["output"]
                for request in provider.requests
                if request.path.endswith("/responses")
                for item in request.json().get("input", [])
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            ]
        if report is not None:
            break
    else:
        raise AssertionError(f"no {verdict} report in {ATTEMPTS} runs: {seen}")
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = list(connection.execute(select(LOG_RECORDS)))
    engine.dispose()
    return report, read, rows


@pytest.mark.slow
def test_a_short_output_reaches_the_model_whole_and_is_intact(
    codex: Path, tmp_path: Path, database: str
) -> None:
    report, read, logs = _run(codex, tmp_path, database, "echo hello from codex", sc.VERDICT_INTACT)
    assert report["verdict"] == sc.VERDICT_INTACT, report
    assert report["source"] == sc.SOURCE_CODEX
    stages = {s["stage"]: s for s in report["stages"]}
    assert set(stages) == {sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT}
    # Codex's size is the bytes of the whole output it hands the model, its wrapper too.
    assert read and len(read[0].encode()) == stages[sc.STAGE_ORIGINAL]["bytes"]
    assert stages[sc.STAGE_LLM_INPUT]["bytes"] == stages[sc.STAGE_ORIGINAL]["bytes"]
    assert "hello from codex" in read[0]
    assert any(row.event_name == "codex.tool_result" for row in logs)


LONG_OUTPUT = "python3 -c \"print('订单 paid, ' * 20000)\""
PRINTED = len(("订单 paid, " * 20000 + "\n").encode())  # 260,001 bytes


def _stages(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["stage"]: s for s in report["stages"]}


def _assert_declared_as_read(report: dict[str, Any], read: list[str], budget: str) -> None:
    """Declared, with the bytes the model read (±1 %), Codex's budget and the settings
    that change it named in the report."""
    stages = _stages(report)
    assert stages[sc.STAGE_ORIGINAL]["bytes"] - PRINTED in WRAPPER
    assert len(read) == 1 and "Warning: truncated output" in read[0]
    kept = stages[sc.STAGE_LLM_INPUT]["bytes"]
    assert abs(kept - len(read[0].encode())) <= 0.01 * len(read[0].encode()), (kept, len(read[0]))
    assert report["lost_chars"] == stages[sc.STAGE_ORIGINAL]["chars"] - kept
    notes = " ".join(report["notes"])
    assert budget in notes and "tool_output_token_limit" in notes, report["notes"]
    assert "max_output_tokens" in notes


@pytest.mark.slow
def test_a_200_kb_output_cut_by_codex_default_policy_is_declared_with_what_the_model_read(
    codex: Path, tmp_path: Path, database: str
) -> None:
    report, read, _ = _run(codex, tmp_path, database, LONG_OUTPUT, sc.VERDICT_DECLARED)
    # What the model read: Codex's cut to 10,000 bytes of head and tail, with its marker.
    assert "chars truncated" in read[0] and len(read[0].encode()) < 10_400
    _assert_declared_as_read(report, read, "10,000 bytes")


@pytest.mark.slow
def test_with_only_the_config_limit_raised_the_call_default_cuts_it_to_10_000_tokens(
    codex: Path, tmp_path: Path, database: str
) -> None:
    raised = "tool_output_token_limit = 200000\n"
    report, read, _ = _run(
        codex, tmp_path, database, LONG_OUTPUT, sc.VERDICT_DECLARED, None, raised
    )
    assert "tokens truncated" in read[0] and 40_000 < len(read[0].encode()) < 40_400
    _assert_declared_as_read(report, read, "10,000 tokens")


@pytest.mark.slow
def test_with_both_limits_raised_the_whole_output_reaches_the_model_and_is_intact(
    codex: Path, tmp_path: Path, database: str
) -> None:
    """Only both settings together keep Codex from cutting: the model reads it whole, as
    the usage of the request that carried it shows."""
    raised = "tool_output_token_limit = 200000\n"
    report, read, _ = _run(
        codex, tmp_path, database, LONG_OUTPUT, sc.VERDICT_INTACT, 200_000, raised
    )
    stages = _stages(report)
    assert read and len(read[0].encode()) == stages[sc.STAGE_ORIGINAL]["bytes"]  # wrapper too
    assert "truncated" not in read[0]
    assert stages[sc.STAGE_LLM_INPUT]["bytes"] == stages[sc.STAGE_ORIGINAL]["bytes"]
    assert report["lost_chars"] == 0 and report["lost_items"] == 0
