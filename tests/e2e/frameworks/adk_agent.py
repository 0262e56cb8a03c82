"""A Google ADK agent traced by ADK's own telemetry, its model reached through LiteLLM's
OpenAI-compatible client (the provider stand-in), offline. Run with the Python of
tests/e2e/adk (its own virtual environment); a ``before_model_callback`` is where its
users cut what the next request carries.

    python adk_agent.py CASE[,CASE...] ENDPOINT...

A case is a pipeline (agent_kit.PIPELINES), ``-off`` appended to name a run whose content
the environment keeps off the spans. ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` chooses
ADK's legacy spans (``call_llm`` with ``gcp.vertex.agent.llm_request``); its default is
the GenAI conventions. Prints {case: {trace_id, calls}}.
"""

from __future__ import annotations

import asyncio
import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import

from agent_kit import ROWS, base_url, cases, cut_rows, finish, tracer_provider
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.lite_llm import LiteLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from opentelemetry import trace

provider = tracer_provider("adk-agent")
trace.set_tracer_provider(provider)
tracer = provider.get_tracer("orders-agent")


def search_orders(status: str) -> str:
    """Search orders by status."""
    return json.dumps([{**row, "status": status} for row in ROWS], ensure_ascii=False)


def cutting(pipeline: str):  # type: ignore[no-untyped-def]
    def cut(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        for content in llm_request.contents:
            for part in content.parts or ():
                response = part.function_response
                if response is not None and isinstance(response.response, dict):
                    result = response.response.get("result")
                    if isinstance(result, str):
                        response.response["result"] = cut_rows(result, pipeline)

    return cut


async def run(case: str) -> dict[str, object]:
    model = LiteLlm(model="openai/gpt-4o", api_base=base_url(), api_key="test")
    agent = LlmAgent(
        name="orders_agent", model=model, tools=[search_orders],
        instruction="Answer with the tool.", before_model_callback=cutting(case.partition("-")[0]),
    )  # fmt: skip
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="orders", user_id="u")
    runner = Runner(agent=agent, app_name="orders", session_service=sessions)
    message = types.Content(role="user", parts=[types.Part(text=f"Refunding orders? ({case})")])
    calls: list[str] = []
    with tracer.start_as_current_span(f"orders-agent {case}") as root:
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message
        ):
            for response in event.get_function_responses():
                calls.append(str(response.id))
    return {"trace_id": format(root.get_span_context().trace_id, "032x"), "calls": calls}


found = {case: asyncio.run(run(case)) for case in cases()}
finish(provider, found)
