"""A pydantic-ai agent traced by its own instrumentation only
(``capabilities=[Instrumentation(...)]``); its ``ProcessHistory`` capability (the
``history_processors`` of earlier releases) is where its users cut what the next request
carries.

    python pydantic_ai_agent.py CASE[,CASE...] ENDPOINT...

A case is a pipeline (agent_kit.PIPELINES), ``-off`` appended for
``include_content=False``, ``@N`` for the instrumentation's data format version N (2 to 6;
its default otherwise). Prints {case: {trace_id, calls}}.
"""

from __future__ import annotations

import dataclasses
import json

from agent_kit import ROWS, base_url, cases, cut_rows, finish, tracer_provider
from pydantic_ai import Agent
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.capabilities.process_history import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

provider = tracer_provider("pydantic-ai-agent")
tracer = provider.get_tracer("orders-agent")
model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(base_url=base_url(), api_key="test"))


def agent_for(case: str) -> Agent:
    case, _, version = case.partition("@")
    pipeline, _, off = case.partition("-")

    def trim(messages: list[ModelMessage]) -> list[ModelMessage]:
        kept: list[ModelMessage] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                parts = [
                    dataclasses.replace(p, content=cut_rows(p.content, pipeline))
                    if isinstance(p, ToolReturnPart) and isinstance(p.content, str)
                    else p
                    for p in message.parts
                ]
                message = dataclasses.replace(message, parts=parts)
            kept.append(message)
        return kept

    settings = InstrumentationSettings(
        tracer_provider=provider,
        include_content=off != "off",
        **({"version": int(version)} if version else {}),
    )
    capabilities = [Instrumentation(settings=settings), ProcessHistory(trim)]
    agent = Agent(model, capabilities=capabilities)

    @agent.tool_plain
    def search_orders(status: str) -> str:
        """Search orders by status."""
        return json.dumps([{**row, "status": status} for row in ROWS], ensure_ascii=False)

    return agent


found = {}
for case in cases():
    with tracer.start_as_current_span(f"orders-agent {case}") as root:
        result = agent_for(case).run_sync(f"Which orders are refunding? ({case})")
        calls = [
            part.tool_call_id
            for message in result.all_messages()
            for part in getattr(message, "parts", ())
            if isinstance(part, ToolReturnPart)
        ]
        found[case] = {"trace_id": format(root.get_span_context().trace_id, "032x"), "calls": calls}
finish(provider, found)
