"""Record what the agent frameworks' own telemetry emits, for the derivation's unit tests.

``python -m tests.collector.derive_spans.record_frameworks`` runs the framework agents of
the end-to-end tests (tests/e2e/frameworks/, in their own cached virtual environment)
against the provider stand-in and writes every span to ``langchain_openinference.json``
(a silent cut with content on; a run with OPENINFERENCE_HIDE_INPUTS and _OUTPUTS) and
``pydantic_ai.json`` (a silent cut; include_content=False) beside this file. Re-run
after upgrading tests/e2e/frameworks/requirements.txt.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from tests.e2e.cached_installs import installed_python

HERE = Path(__file__).parent
FRAMEWORKS = HERE.parents[1] / "e2e" / "frameworks"
HIDDEN = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}
#: File -> the runs it holds: (agent, cases, environment).
RUNS = {
    "langchain_openinference.json": [
        ("langchain_agent.py", "cut", {}),
        ("langchain_agent.py", "whole", HIDDEN),
    ],
    "pydantic_ai.json": [("pydantic_ai_agent.py", "cut,whole-off", {})],
}


def main() -> None:
    python = installed_python(FRAMEWORKS)
    script = [ToolCall("search_orders", {"status": "refunding"}), "Orders A-0000 to A-0039."]
    with ProviderStandIn(script=script, loop=True) as llm, tempfile.TemporaryDirectory() as work:
        for name, runs in RUNS.items():
            spans: list[object] = []
            for agent, cases, env in runs:
                target = Path(work) / "spans.json"
                subprocess.run(
                    [str(python), str(FRAMEWORKS / agent), cases, "--record", str(target)],
                    check=True, timeout=240,
                    env={**os.environ, "OPENAI_BASE_URL": llm.base_url, **env},
                )  # fmt: skip
                spans += json.loads(target.read_text())
            text = json.dumps(spans, ensure_ascii=False, indent=1)
            (HERE / name).write_text(text + "\n", encoding="utf-8")
            print(name, len(spans), "spans")


if __name__ == "__main__":
    main()
