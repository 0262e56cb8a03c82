"""Record what the Vercel AI SDK's own telemetry emits, for the derivation's unit tests.

``python -m tests.collector.derive_spans.record_vercel_ai`` runs the AI SDK agent of the
end-to-end tests (tests/e2e/vercel_ai/agent.mjs, the npm packages of its lock file) under
each of ``@ai-sdk/otel``'s integrations against the provider stand-in and writes every
span to ``vercel_ai_otel.json`` and ``vercel_ai_legacy.json`` beside this file. Re-run
after upgrading the packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from tests.e2e.cached_installs import prepared_node_project

HERE = Path(__file__).parent
PROJECT = HERE.parents[1] / "e2e" / "vercel_ai"
#: A silent cut in a streamed run, a declared one in a generated run, content off.
CASES = "stream-cut,generate-marker,generate-whole-off"


def main() -> None:
    script = [ToolCall("search_orders", {"status": "refunding"}), "Orders A-0000 to A-0039."]
    with ProviderStandIn(script=script, loop=True) as llm, tempfile.TemporaryDirectory() as work:
        project = prepared_node_project(PROJECT, Path(work))
        for flavour in ("otel", "legacy"):
            target = HERE / f"vercel_ai_{flavour}.json"
            subprocess.run(
                ["node", "agent.mjs", flavour, CASES, "--record", str(target)],
                cwd=project, check=True, timeout=120,
                env={**os.environ, "OPENAI_BASE_URL": llm.base_url},
            )  # fmt: skip
            print(target.name, len(json.loads(target.read_text())), "spans")


if __name__ == "__main__":
    main()
