"""An OpenAI Agents SDK agent whose tool output is cut before the model sees it.

    python examples/openai_agents_agent.py            # nothing cut: intact
    python examples/openai_agents_agent.py --failure  # cut to 500 chars, no word: silent
    python examples/openai_agents_agent.py --remedy   # clipped with a marker: declared

The agent searches an error log. ``--failure`` installs a ``call_model_input_filter``
that cuts every tool output to its first 500 characters, as loops do to save tokens
(cloudflare/agents#2014): the model takes the first lines for the whole log, and
ctxledger reports ``silent``. ``--remedy`` clips with :func:`ctxledger.remedies.clip_text`
instead: head and tail kept, a marker saying what was left out and how to get it, so the
loss is ``declared``. The tracing processor feeds ctxledger from the SDK's own spans.

Runs against a provider stand-in on the Responses API, started in this process (no
network, no keys), or ``--provider-url``; ``--collector-url http://127.0.0.1:4318`` sends
the spans to a collector (``ctxledger up``).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import agents
from _common import configure, finish, parse_flags, provider, summary
from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import CallModelData, ModelInputData
from openai import AsyncOpenAI

import ctxledger
from ctxledger.integrations.openai_agents import CtxledgerTracingProcessor
from ctxledger.remedies import clip_text

MODEL = "gpt-4o"
CUT_CHARS = 500
LOG_CALL = "call_logs_1"


@function_tool
def search_logs(service: str) -> str:
    """The last error lines of a service's log."""
    return "\n".join(
        f"2026-12-01T09:{n // 60:02d}:{n % 60:02d}Z ERROR {service} 订单 O-{n:05d} 支付回调超时"
        for n in range(200)
    )


def cut_outputs(keep: Any) -> Any:
    """A ``call_model_input_filter`` that rewrites every tool output with ``keep``."""

    def filter_input(data: CallModelData[Any]) -> ModelInputData:
        items = []
        for item in data.model_data.input:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                item = {**item, "output": keep(str(item.get("output", "")))}
            items.append(item)
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return filter_input


async def ask(base_url: str, mode: str) -> str:
    client = AsyncOpenAI(base_url=base_url, api_key="x")
    agent = Agent(
        name="log-agent",
        instructions="You explain production errors.",
        tools=[search_logs],
        model=OpenAIResponsesModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(),
    )
    filters = {
        "failure": cut_outputs(lambda text: text[:CUT_CHARS]),
        "remedy": cut_outputs(lambda text: clip_text(text, budget=CUT_CHARS, by="lines").text),
    }
    config = RunConfig(call_model_input_filter=filters.get(mode), tracing_disabled=False)
    result = await Runner.run(agent, "Why do payments fail?", run_config=config)
    return str(result.final_output)


def run_agent(mode: str, base_url: str | None = None) -> dict[str, Any]:
    """One run (``mode``: plain, failure or remedy); its trace id, calls and outcome."""
    from ctxledger_cli.provider import ToolCall

    script = [
        ToolCall("search_logs", {"service": "payments"}, id=LOG_CALL),
        "Payment callbacks time out for 200 orders.",
    ]
    # Replaces the SDK's default processor, which would export traces to OpenAI.
    agents.set_trace_processors([CtxledgerTracingProcessor()])
    with provider(base_url, script) as url, ctxledger.run("openai-agents-agent") as run:
        outcome = asyncio.run(ask(url, mode))
    return summary(run, [LOG_CALL], outcome)


def main() -> int:
    flags = parse_flags(__doc__.splitlines()[0])
    configure("openai-agents-agent", flags)
    return finish(run_agent(flags.mode, flags.provider_url))


if __name__ == "__main__":
    sys.exit(main())
