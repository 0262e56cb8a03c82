"""Real agent loops on the real ``openai`` client, instrumented by a stock GenAI
instrumentation and no ctxledger SDK: run as a child process by ``test_zero_sdk.py``.

``python -m tests.e2e.zero_sdk_agent INSTRUMENTATION CASES ENDPOINT...`` instruments
``openai`` with one of ``openai-v2`` (OpenTelemetry's, latest experimental conventions,
content on spans unless told otherwise by the environment), ``openinference`` or
``openllmetry``, runs each case as one trace against a stand-in chat-completions server,
records each tool execution as the conventions describe it (a GenAI ``execute_tool``
span, or an OpenInference ``TOOL`` span through OpenInference's own tracer), exports
with the real OTLP/HTTP exporter to every endpoint, and prints one JSON line: case ->
trace id and the tool call ids it issued.

The agent's "context manager" is where each case puts its pipeline fault: it builds
the next request's messages from the tool's full output.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ctxledger_cli.provider import ProviderStandIn, ToolCall

MODEL = "gpt-4o"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
    for name in ("search_orders", "read_log")
]
#: Whether the instrumentation was told to keep content off spans (the tool spans follow).
CONTENT_ON_SPANS = os.environ.get("ZERO_SDK_CONTENT", "on") == "on"
#: A context window makes the stand-in discard like ollama: the oldest messages of a
#: longer prompt, silently, with a truthful prompt_tokens.
SERVER_WINDOW = int(os.environ.get("ZERO_SDK_SERVER_WINDOW", "0")) or None
#: The stand-in counts like a tokenizer this many times the model's own (1.0: its own).
COUNT_SCALE = float(os.environ.get("ZERO_SDK_COUNT_SCALE", "1.0"))


def orders(count: int = 40) -> list[dict[str, Any]]:
    return [
        {"id": f"ord-{i:03d}", "status": "refund" if i % 7 == 0 else "paid", "note": f"第{i}单"}
        for i in range(count)
    ]


def log_text(lines: int = 200) -> str:
    return "\n".join(
        f"2026-12-01T10:{i % 60:02d}:00 worker-{i % 5} ok step {i}" for i in range(lines)
    )


# --- the pipeline faults each case puts between the tool and the next request ------------


def keep_rows(limit: int) -> Callable[[str], str]:
    def cut(text: str) -> str:
        return json.dumps(json.loads(text)[:limit], ensure_ascii=False)

    return cut


def keep_chars(limit: int) -> Callable[[str], str]:
    return lambda text: text[:limit]


def compact(text: str) -> str:
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


def marked(text: str) -> str:
    rows = json.loads(text)
    return json.dumps(rows[:10], ensure_ascii=False) + f"\n[... {len(rows) - 10} more rows omitted]"


# --- tool spans, as each ecosystem records them ---------------------------------------------


class ToolSpans:
    """Emits one span per tool execution the way the instrumentation's ecosystem does."""

    def __init__(self, instrumentation: str, provider: TracerProvider) -> None:
        self.tracer = trace.get_tracer("zero-sdk-agent", tracer_provider=provider)
        self.openinference = instrumentation == "openinference"
        if self.openinference:
            from openinference.instrumentation import OITracer, TraceConfig

            self.oi_tracer = OITracer(self.tracer, TraceConfig())

    def run(self, call: Any, result: str, with_id: bool = True) -> None:
        name, arguments = call.function.name, call.function.arguments
        if self.openinference:
            from openinference.semconv.trace import SpanAttributes

            with self.oi_tracer.start_as_current_span(name, openinference_span_kind="tool") as span:
                span.set_tool(name=name, parameters=arguments)
                span.set_input(arguments, mime_type="application/json")
                if with_id:
                    span.set_attribute(SpanAttributes.TOOL_ID, call.id)
                span.set_output(result)
            return
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
        }
        if with_id:
            attributes["gen_ai.tool.call.id"] = call.id
        if CONTENT_ON_SPANS:  # as the instrumentations do: arguments and result are content
            attributes["gen_ai.tool.call.arguments"] = arguments
            attributes["gen_ai.tool.call.result"] = result
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
            pass


class Agent:
    def __init__(self, client: openai.OpenAI, tools: ToolSpans, tracer: trace.Tracer) -> None:
        self.client, self.tools, self.tracer = client, tools, tracer

    def ask(self, messages: list[dict[str, Any]]) -> Any:
        response = self.client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        return response.choices[0].message

    def turn(
        self,
        messages: list[dict[str, Any]],
        results: dict[str, str],
        reduce: Callable[[str], str] = lambda text: text,
        with_id: bool = True,
    ) -> list[str]:
        """Ask, run the tools the answer calls, and put the (reduced) results into the
        history; the call ids."""
        message = self.ask(messages)
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or ():
            output = results[call.function.name]
            self.tools.run(call, output, with_id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": reduce(output)})
        return [call.id for call in message.tool_calls or ()]


def opening(task: str, system: str = "You are a support agent.") -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


ORDERS = json.dumps(orders(), ensure_ascii=False)
PRETTY_ESCAPED = json.dumps(orders(), ensure_ascii=True, indent=2)
LOG = log_text()


def search(call_id: str) -> list[ToolCall]:
    return [ToolCall("search_orders", {"query": "refunds"}, id=call_id)]


def simple_case(
    reduce: Callable[[str], str],
    output: str = ORDERS,
    with_id: bool = True,
    tool: str = "search_orders",
) -> Callable[[Agent, ProviderStandIn, str], list[str]]:
    def case(agent: Agent, llm: ProviderStandIn, name: str) -> list[str]:
        llm.script([ToolCall(tool, {"query": "refunds"}, id=f"call_{name}")], "done")
        messages = opening(f"case {name}: which orders were refunded?")
        issued = agent.turn(messages, {tool: output}, reduce, with_id)
        agent.ask(messages)
        return issued

    return case


def orphan(agent: Agent, llm: ProviderStandIn, name: str) -> list[str]:
    """The history builder loses the tool message: the provider refuses the request."""
    llm.script(search(f"call_{name}"))
    messages = opening(f"case {name}: which orders were refunded?")
    issued = agent.turn(messages, {"search_orders": ORDERS})
    with contextlib.suppress(openai.BadRequestError):
        agent.ask([m for m in messages if m["role"] != "tool"])
    return issued


def drop(agent: Agent, llm: ProviderStandIn, name: str) -> list[str]:
    """The history is rebuilt without the call and its result (a summary instead)."""
    llm.script(search(f"call_{name}"), "done")
    messages = opening(f"case {name}: which orders were refunded?")
    issued = agent.turn(messages, {"search_orders": ORDERS})
    rebuilt = [*opening(f"case {name}: which orders were refunded?"),
               {"role": "user", "content": "(earlier tool output summarised away)"}]  # fmt: skip
    agent.ask(rebuilt)
    return issued


def two_agents(agent: Agent, llm: ProviderStandIn, name: str) -> list[str]:
    """Two conversations in one trace, interleaved: neither may drop the other's result."""
    llm.script(
        search(f"call_{name}_a"), [ToolCall("read_log", {"query": "x"}, id=f"call_{name}_b")]
    )
    llm.script("done", "done")
    planner = opening(f"case {name}: plan", system="You plan.")
    writer = opening(f"case {name}: write", system="You write.")
    issued = agent.turn(planner, {"search_orders": ORDERS})
    issued += agent.turn(writer, {"read_log": LOG})
    agent.ask(planner)
    agent.ask(writer)
    return issued


def server_window(agent: Agent, llm: ProviderStandIn, name: str) -> list[str]:
    """Two parallel results, the older one large: the server (run with a window) discards
    the oldest messages of the next request, that result among them, and answers 200."""
    llm.script(
        [
            ToolCall("search_orders", {"query": "refunds"}, id=f"call_{name}_old"),
            ToolCall("read_log", {"query": "errors"}, id=f"call_{name}_new"),
        ],
        "done",
    )
    messages = opening(f"case {name}: which orders were refunded?")
    big = json.dumps(orders(150), ensure_ascii=False)
    issued = agent.turn(messages, {"search_orders": big, "read_log": log_text(12)})
    agent.ask(messages)
    return issued


CASES: dict[str, Callable[[Agent, ProviderStandIn, str], list[str]]] = {
    "row_cut": simple_case(keep_rows(15)),
    "char_cut": simple_case(keep_chars(2_000), LOG, tool="read_log"),
    "reserialized": simple_case(compact, PRETTY_ESCAPED),
    "marker": simple_case(marked),
    "orphan": orphan,
    "drop": drop,
    "two_agents": two_agents,
    "no_call_ids": simple_case(keep_rows(15), with_id=False),
    # Run with OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT set: the telemetry cuts, the pipeline not.
    "length_limit": simple_case(lambda text: text, json.dumps(orders(400), ensure_ascii=False)),
    # Run with content kept off the spans.
    "content_off": simple_case(lambda text: text),
    # Run with ZERO_SDK_SERVER_WINDOW set.
    "server_window": server_window,
}


def instrument(instrumentation: str, provider: TracerProvider) -> None:
    if instrumentation == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif instrumentation == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=provider)
    elif instrumentation == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LLInstrumentor

        LLInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown instrumentation {instrumentation!r}")


def main(instrumentation: str, cases: list[str], endpoints: list[str]) -> None:
    provider = TracerProvider(
        resource=Resource.create({"service.name": f"zero-sdk-{instrumentation}"})
    )
    for endpoint in endpoints:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    instrument(instrumentation, provider)
    tracer = trace.get_tracer("zero-sdk-agent", tracer_provider=provider)
    found: dict[str, dict[str, Any]] = {}
    window = {"context_window": SERVER_WINDOW, "silent_front_discard": True}
    with ProviderStandIn(**(window if SERVER_WINDOW else {}), count_scale=COUNT_SCALE) as llm:
        agent = Agent(
            openai.OpenAI(base_url=llm.base_url, api_key="test"),
            ToolSpans(instrumentation, provider),
            tracer,
        )
        for name in cases:
            with tracer.start_as_current_span(f"invoke_agent {name}") as root:
                calls = CASES[name](agent, llm, name)
            found[name] = {
                "trace_id": format(root.get_span_context().trace_id, "032x"),
                "calls": calls,
            }
    provider.shutdown()  # flushes every exporter: each answered only after its commit
    print(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","), sys.argv[3:])
