"""Real Claude Code (npm ``@anthropic-ai/claude-code`` 2.1.332, installed by the test into a
cached ``node_modules``) in print mode against the provider stand-in, exporting its own
telemetry over OTLP (logs and traces) to a real collector, as a new user would set it
up: its log events are stored by their ids, and its spans give no false loss."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from ctxledger.verdicts import LOSING_VERDICTS
from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.collector.live_collector import LiveCollector

from .cached_installs import installed_node_modules
from .claude_code_telemetry import telemetry_env
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "claude_code"
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


@pytest.mark.slow
def test_claude_codes_own_telemetry_reaches_the_collector(claude: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    script = [
        ToolCall("Bash", {"command": "seq 1 3000", "description": "Print numbers"}, CALL_ID),
        "The numbers go from 1 to 3000.",
    ]
    home = tmp_path / "home"
    home.mkdir()
    with (
        LiveCollector(Settings(database_url=url, auto_migrate=True)) as collector,
        ProviderStandIn(script=script) as stand_in,
    ):
        done = subprocess.run(
            [str(claude), "-p", "Print the numbers 1 to 3000 with Bash and tell me the range.",
             "--allowedTools", "Bash", "--model", "claude-sonnet-4-6"],
            cwd=home, env=telemetry_env(collector.url, stand_in.url, home),
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 to 3000" in done.stdout
        reports = httpx.get(
            f"{collector.url}/api/v1/reports", params={"tool_call_id": CALL_ID}
        ).json()["reports"]

    engine = make_engine(url)
    with engine.connect() as connection:
        rows = list(connection.execute(select(LOG_RECORDS)))
    engine.dispose()
    by_event: dict[str, list[Any]] = {}
    for row in rows:
        by_event.setdefault(row.event_name, []).append(row)
    (result,) = by_event["claude_code.tool_result"]
    numbers = json.loads(result.numbers)
    assert result.call_id == CALL_ID
    assert numbers["tool_result_size_bytes"] == len(OUTPUT.encode())
    # Two requests: the question, then the question with the tool's result.
    assert len(by_event["claude_code.api_request_body"]) == 2
    assert len(by_event["claude_code.api_request"]) == 2
    sessions = {row.session_id for row in rows}
    assert len(sessions) == 1 and None not in sessions
    # Its spans alone cannot show the result's journey yet: never a false loss.
    assert reports, "the tool span's journey"
    assert not {r["verdict"] for r in reports} & set(LOSING_VERDICTS), reports
