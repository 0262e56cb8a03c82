"""A Strands agent traced by its own telemetry only (``StrandsTelemetry`` with our tracer
provider), its model OpenAI-compatible (the provider stand-in). Run with the Python of
tests/e2e/strands (its own virtual environment); a ``BeforeModelCallEvent`` hook is where
its users cut what the next request carries (as a conversation manager does).

    python strands_agent.py CASE[,CASE...] ENDPOINT...

A case is a pipeline (agent_kit.PIPELINES), ``-off`` appended to name a run whose content
Strands redacts. ``OTEL_SEMCONV_STABILITY_OPT_IN`` chooses what Strands writes (read once
per process): ``gen_ai_latest_experimental`` the latest conventions, and
``gen_ai_unredacted_attributes=`` (an empty list) redacts every message and tool result.
Prints {case: {trace_id, calls}}.
"""

from __future__ import annotations

import json
from typing import Any

from agent_kit import ROWS, base_url, cases, cut_rows, finish, tracer_provider
from opentelemetry import trace
from strands import Agent, tool
from strands.hooks import BeforeModelCallEvent, HookProvider, HookRegistry
from strands.models.openai import OpenAIModel
from strands.telemetry import StrandsTelemetry

provider = tracer_provider("strands-agent")
trace.set_tracer_provider(provider)
StrandsTelemetry(tracer_provider=provider)
tracer = provider.get_tracer("orders-agent")


@tool
def search_orders(status: str) -> str:
    """Search orders by status."""
    return json.dumps([{**row, "status": status} for row in ROWS], ensure_ascii=False)


class CutResults(HookProvider):
    """Before each model call, what the pipeline keeps of every tool result's text."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeModelCallEvent, self.cut)

    def cut(self, event: BeforeModelCallEvent) -> None:
        for message in event.agent.messages:
            for block in message["content"]:
                for part in block.get("toolResult", {}).get("content", []):
                    if "text" in part:
                        part["text"] = cut_rows(part["text"], self.pipeline)


found = {}
for case in cases():
    model = OpenAIModel(client_args={"base_url": base_url(), "api_key": "test"}, model_id="gpt-4o")
    hooks = [CutResults(case.partition("-")[0])]
    agent = Agent(model=model, tools=[search_orders], hooks=hooks, callback_handler=None)
    with tracer.start_as_current_span(f"orders-agent {case}") as root:
        agent(f"Which orders are refunding? ({case})")
    calls = [
        block["toolResult"]["toolUseId"]
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]
    found[case] = {"trace_id": format(root.get_span_context().trace_id, "032x"), "calls": calls}
finish(provider, found)
