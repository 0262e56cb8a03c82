"""How the tests run OpenAI's Codex CLI offline: ``codex exec`` against the provider
stand-in's Responses API, exporting its own logs and traces over OTLP/HTTP (what
docs/zero-sdk.md tells a user to set in config.toml)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cached_installs import installed_node_modules
from .helpers import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "e2e" / "codex"
API_KEY_VARIABLE = "CTXLEDGER_STAND_IN_KEY"


def codex_binary() -> Path:
    """The platform package's binary (the npm package's launcher only finds and runs it)."""
    modules = installed_node_modules(PROJECT)
    found = sorted(modules.glob("@openai/codex-linux-*/vendor/*/bin/codex"))
    if not found:
        pytest.skip(f"no Codex binary for this platform in {modules}")
    return found[0]


def config_toml(
    provider_url: str, otlp_endpoint: str, model: str = "gpt-5", extra: str = ""
) -> str:
    """Codex's config.toml: the stand-in as its model provider, no approvals, its logs and
    traces to ``otlp_endpoint`` (Codex adds no path to an endpoint: each names its own)."""
    return f"""model = "{model}"
model_provider = "stand_in"
approval_policy = "never"
{extra}
[model_providers.stand_in]
name = "provider stand-in"
base_url = "{provider_url}/v1"
wire_api = "responses"
env_key = "{API_KEY_VARIABLE}"

[otel]
exporter = {{ otlp-http = {{ endpoint = "{otlp_endpoint}/v1/logs", protocol = "binary" }} }}
trace_exporter = {{ otlp-http = {{ endpoint = "{otlp_endpoint}/v1/traces", protocol = "binary" }} }}
"""


@dataclass(frozen=True)
class CodexRun:
    stdout: str
    stderr: str


def run_codex(
    binary: Path, workdir: Path, provider_url: str, otlp_endpoint: str, extra_config: str = ""
) -> CodexRun:
    """One ``codex exec`` in ``workdir`` (its CODEX_HOME beside it); fails the test when
    Codex does not exit 0. Codex exports what it has before it exits."""
    home = workdir.parent / f"{workdir.name}-codex-home"
    home.mkdir(parents=True, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config_toml(provider_url, otlp_endpoint, extra=extra_config))
    env = {**os.environ, "CODEX_HOME": str(home), API_KEY_VARIABLE: "stand-in"}
    done = subprocess.run(
        [str(binary), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
         "Run the command and tell me what it printed."],
        cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return CodexRun(done.stdout, done.stderr)
