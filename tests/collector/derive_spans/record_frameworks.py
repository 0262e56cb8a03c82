"""Record what the agent frameworks' own telemetry emits, for the derivation's unit tests.

``python -m tests.collector.derive_spans.record_frameworks [FILE...]`` runs the framework agents of
the end-to-end tests (tests/e2e/frameworks/, in their own cached virtual environment)
against the provider stand-in and writes every span to ``langchain_openinference.json``
(a silent cut with content on; a run with OPENINFERENCE_HIDE_INPUTS and _OUTPUTS) and
``pydantic_ai.json`` (a silent cut; include_content=False), and the Strands agent (in
tests/e2e/strands' environment) to ``strands_legacy.json`` and ``strands_latest.json``
(whole, cut and declared, then with every message and result redacted; its default
conventions, then ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``) beside
this file; the Google ADK agent (tests/e2e/adk's environment) to ``adk_semconv.json``
(its default GenAI conventions, content on and off) and ``adk_legacy.json`` (its older
``call_llm`` spans). Re-run after upgrading any of those requirements.txt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from tests.e2e.cached_installs import installed_python

HERE = Path(__file__).parent
FRAMEWORKS = HERE.parents[1] / "e2e" / "frameworks"
#: The virtual environment the Strands agent runs in (its pins clash with the others').
STRANDS = HERE.parents[1] / "e2e" / "strands"
HIDDEN = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}
OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST = {OPT_IN: "gen_ai_latest_experimental"}
#: Strands' redaction of every message and tool result (an empty list of attributes kept).
REDACTED = "gen_ai_unredacted_attributes="
#: Google ADK's environment (LiteLLM and Google's packages pin their own versions).
ADK = HERE.parents[1] / "e2e" / "adk"
ADK_CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
ADK_OLDER = {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}
#: File -> the runs it holds: (environment's project, agent, cases, environment variables).
RUNS = {
    "langchain_openinference.json": [
        (FRAMEWORKS, "langchain_agent.py", "cut", {}),
        (FRAMEWORKS, "langchain_agent.py", "whole", HIDDEN),
    ],
    "pydantic_ai.json": [(FRAMEWORKS, "pydantic_ai_agent.py", "cut,whole-off", {})],
    "strands_legacy.json": [
        (STRANDS, "strands_agent.py", "whole,cut,marker", {}),
        (STRANDS, "strands_agent.py", "whole-off", {OPT_IN: REDACTED}),
    ],
    "strands_latest.json": [
        (STRANDS, "strands_agent.py", "whole,cut,marker", LATEST),
        (STRANDS, "strands_agent.py", "whole-off", {OPT_IN: f"{LATEST[OPT_IN]},{REDACTED}"}),
    ],
    "adk_semconv.json": [
        (ADK, "adk_agent.py", "whole,cut,marker", ADK_CONTENT),
        (ADK, "adk_agent.py", "whole-off", {}),
    ],
    "adk_legacy.json": [
        (ADK, "adk_agent.py", "whole,cut,marker", ADK_OLDER),
        (
            ADK,
            "adk_agent.py",
            "whole-off",
            {**ADK_OLDER, "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
        ),
    ],
}


def main(names: list[str]) -> None:
    """Record the files named (every file when none is)."""
    script = [ToolCall("search_orders", {"status": "refunding"}), "Orders A-0000 to A-0039."]
    with ProviderStandIn(script=script, loop=True) as llm, tempfile.TemporaryDirectory() as work:
        for name, runs in RUNS.items():
            if names and name not in names:
                continue
            spans: list[object] = []
            for project, agent, cases, env in runs:
                target = Path(work) / "spans.json"
                python = installed_python(project)
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
    main(sys.argv[1:])
