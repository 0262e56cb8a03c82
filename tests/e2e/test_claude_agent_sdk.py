"""The Claude Agent SDK (PyPI ``claude-agent-sdk``, which runs the Claude Code it bundles)
audited as Claude Code is, with no ctxledger SDK: ``examples/claude_agent_sdk_agent.py``
turns Claude Code's telemetry on through the agent's options and points it at a real
collector; the model is the provider stand-in. The package lives in a cached virtual
environment of its own (``tests/e2e/claude_agent_sdk/requirements.txt``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector

from .cached_installs import installed_python
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "claude_agent_sdk"
EXAMPLE = REPO_ROOT / "examples" / "claude_agent_sdk_agent.py"
WHOLE, PERSISTED = "toolu_agent_sdk_whole", "toolu_agent_sdk_persisted"


@pytest.fixture(scope="module")
def python() -> Path:
    return installed_python(PROJECT)


def _env(home: Path) -> dict[str, str]:
    """A user's shell: no ctxledger or OpenTelemetry settings of ours, any key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLEDGER_", "OTEL_"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-stand-in",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")  # fmt: skip
    return env


@pytest.mark.slow
def test_the_agent_sdks_tool_results_are_judged_from_claude_codes_telemetry(
    python: Path, tmp_path: Path
) -> None:
    script: list[ToolCall | str] = [
        ToolCall("Bash", {"command": "seq 1 3000", "description": "Print"}, WHOLE),
        ToolCall("Bash", {"command": "seq 1 30000", "description": "Print more"}, PERSISTED),
        "Done.",
    ]
    home = tmp_path / "home"
    home.mkdir()
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    with (
        LiveCollector(Settings(database_url=url, auto_migrate=True)) as collector,
        ProviderStandIn(script=script) as stand_in,
    ):
        done = subprocess.run(
            [str(python), str(EXAMPLE), "Print the numbers with Bash.",
             "--collector", collector.url, "--base-url", stand_in.url, "--cwd", str(home)],
            env=_env(home), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        session = done.stderr.rsplit("session ", 1)[-1].strip()
        reports: dict[str, list[dict[str, Any]]] = {
            call: httpx.get(
                f"{collector.url}/api/v1/reports", params={"tool_call_id": call}
            ).json()["reports"]
            for call in (WHOLE, PERSISTED)
        }
    assert "Done." in done.stdout
    whole = [r["verdict"] for r in reports[WHOLE]]
    assert whole == ["intact", "intact"], reports[WHOLE]  # in both later requests
    (persisted,) = reports[PERSISTED]
    assert persisted["verdict"] == "declared", persisted
    assert {r["trace_id"] for r in reports[WHOLE]} == {session.replace("-", "")}
    assert {r["source"] for r in [*reports[WHOLE], persisted]} == {"claude_code"}
