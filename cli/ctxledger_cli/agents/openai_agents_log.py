"""A log agent on the OpenAI Agents SDK (seed 002's data) whose tool output is cut
before the model sees it.

The agent reads seed 002's 500-line pay-service log; the error stack that explains the
restart is at its very end. ``failure`` installs a ``call_model_input_filter`` that cuts
every tool output to its first 500 characters, as loops do to save tokens
(cloudflare/agents#2014): the model takes the first lines for the whole log, and
ctxledger reports ``silent``. ``remedy`` clips as seed 002 recommends instead: head 40 +
tail 20 lines, with the marker of :mod:`ctxledger.remedies.clip` between them saying
what was left out and where the rest is, declared to the SDK (a ``clipped`` stage): the
loss is ``declared``. ``plain`` passes the log whole: ``intact``. Instrumentation:
:class:`ctxledger.integrations.openai_agents.CtxledgerTracingProcessor` feeds ctxledger
from the SDK's own spans (``original``, ``assembled``, ``sent``).

    python examples/openai_agents_agent.py --failure [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import agents
import openai
from agents import Agent, ModelSettings, RunConfig, Runner, ToolCallItem, function_tool
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import CallModelData, ModelInputData

import ctxledger
from ctxledger.integrations.openai_agents import CtxledgerTracingProcessor
from ctxledger.remedies.clip import STRATEGY as HEAD_TAIL
from ctxledger.remedies.clip import render_clip
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
    shared_ssl_context,
)
from ctxledger_cli.agents.common import run_with_provider as _run_with_provider
from ctxledger_cli.demo.seed_002_log_clip import (
    LOG_HEAD_LINES,
    LOG_PATH,
    LOG_TAIL_LINES,
    pay_service_log,
)
from ctxledger_cli.provider import Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "log-agent"
CUT_CHARS = 500
INSTRUCTIONS = "你负责排查线上故障。只看到部分日志时要明确说明。"
QUESTION = f"支付服务 03:12 为什么重启了？日志在 {LOG_PATH}。"


@function_tool
def read_log(path: str) -> str:
    """A service's log file, whole."""
    return pay_service_log()


def clip_head_tail(text: str) -> str:
    """Seed 002's clip: the first 40 and the last 20 lines, the marker between them."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= LOG_HEAD_LINES + LOG_TAIL_LINES:
        return text
    head_end = sum(map(len, lines[:LOG_HEAD_LINES]))
    tail_start = len(text) - sum(map(len, lines[-LOG_TAIL_LINES:]))
    more = f"the whole log is {LOG_PATH}"
    return render_clip(text, head_end, tail_start, unit="lines", how_to_get_more=more)


def _tool_names(items: Sequence[Any]) -> dict[str, str]:
    return {
        str(item.get("call_id")): str(item.get("name"))
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call"
    }


def _reduced(item: Mapping[str, object], names: dict[str, str], mode: Mode) -> dict[str, Any]:
    """A ``function_call_output`` item with its output cut or clipped (and declared)."""
    output = str(item.get("output", ""))
    kept = output[:CUT_CHARS] if mode == "failure" else clip_head_tail(output)
    if mode == "remedy" and kept != output:
        call_id = str(item.get("call_id"))
        ctxledger.measure(
            "clipped",  # a custom stage between `original` and `assembled`
            kept,
            tool_call_id=call_id,
            tool_name=names.get(call_id),
            order=25,
            declared=True,
            strategy=HEAD_TAIL,
            marker=True,
        )
    return {**item, "output": kept}


def reduce_outputs(mode: Mode) -> Callable[[CallModelData[Any]], ModelInputData] | None:
    """The ``call_model_input_filter`` of ``mode``: every tool output cut (``failure``)
    or clipped and declared (``remedy``); none for ``plain``."""
    if mode == "plain":
        return None

    def filter_input(data: CallModelData[Any]) -> ModelInputData:
        names = _tool_names(data.model_data.input)
        items: list[Any] = [
            _reduced(item, names, mode)
            if isinstance(item, dict) and item.get("type") == "function_call_output"
            else item
            for item in data.model_data.input
        ]
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return filter_input


async def ask(provider_url: str, mode: Mode, model: str) -> AgentRun:
    client = openai.AsyncOpenAI(
        base_url=f"{provider_url}/v1",
        api_key="stand-in",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=shared_ssl_context()),
    )
    agent = Agent(
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        tools=[read_log],
        model=OpenAIResponsesModel(model=model, openai_client=client),
        model_settings=ModelSettings(),
    )
    config = RunConfig(call_model_input_filter=reduce_outputs(mode), tracing_disabled=False)
    async with client:
        result = await Runner.run(agent, QUESTION, run_config=config)
    call_ids = tuple(
        str(getattr(item.raw_item, "call_id", ""))
        for item in result.new_items
        if isinstance(item, ToolCallItem)
    )
    return AgentRun(str(result.final_output), call_ids, len(result.raw_responses))


def run_log_agent(provider_url: str, mode: Mode = "plain", model: str = MODEL) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``)."""
    # Replaces the SDK's default processor, which would export traces to OpenAI.
    agents.set_trace_processors([CtxledgerTracingProcessor()])
    with ctxledger.run(AGENT_NAME):
        return asyncio.run(ask(provider_url, mode, model))


def script(call_id: str | None = None) -> list[Step]:
    """What the stand-in answers this agent: one log read, then the answer."""
    read = ToolCall("read_log", {"path": LOG_PATH}, id=call_id or new_call_id("call_log"))
    return [
        Step(tool_calls=(read,)),
        Step(text="03:11:58 数据库连接池耗尽（active=200），回调失败，健康检查连续失败后重启。"),
    ]


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    return _run_with_provider(provider_url, script, lambda url: run_log_agent(url, mode))


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
