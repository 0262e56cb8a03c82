"""A LangGraph agent whose history is trimmed before each model call (langchain#33245).

The model asks for two tools at once: a large order search and a small customer lookup.
``failure`` trims the history with ``trim_messages(strategy="last")`` to a token budget:
it keeps the newest messages that fit, so the small ToolMessage stays while the large
one and the AIMessage that issued both calls are cut. The provider refuses the orphan
with OpenAI's 400; ctxledger reports the small result ``orphaned`` and the large one
``dropped``. ``remedy`` trims with
:func:`ctxledger.integrations.langchain.trim_keeping_pairs`: the large result's content
becomes the emergency-trim placeholder, declared; every pair stays and the model answers.
Instrumentation: ``CtxledgerCallbackHandler`` in the run's config (``original`` when a
tool ends, ``assembled`` when the chat model starts) and the httpx hook (``sent``).

    python examples/langgraph_trim_agent.py --failure [--collector-url http://127.0.0.1:4318]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import openai
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

import ctxledger
from ctxledger.integrations.langchain import CtxledgerCallbackHandler, trim_keeping_pairs
from ctxledger_cli.agents.common import (
    AgentRun,
    Mode,
    example_main,
    new_call_id,
)
from ctxledger_cli.agents.common import run_with_provider as _run_with_provider
from ctxledger_cli.agents.openai_chat import (
    instrumented_http_client,
)
from ctxledger_cli.provider import Step, ToolCall

MODEL = "gpt-4o"
AGENT_NAME = "langgraph-trim-agent"
HISTORY_BUDGET_TOKENS = 1_500
SYSTEM = "You answer order questions."
QUESTION = "C-7's refunds?"


@tool
def search_orders(status: str) -> str:
    """All orders with this status."""
    orders = [
        {"id": f"O-{n:05d}", "customer": "C-7", "status": status, "total": 19.5 + n,
         "items": ["收据打印机", "热敏纸"]}
        for n in range(120)
    ]  # fmt: skip
    return json.dumps({"results": orders}, ensure_ascii=False)


@tool
def get_customer(customer_id: str) -> str:
    """One customer's profile."""
    return json.dumps({"id": customer_id, "name": "王芳", "tier": "gold"}, ensure_ascii=False)


TOOLS = [search_orders, get_customer]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def fit_history(history: Sequence[BaseMessage], mode: Mode, model: str) -> list[BaseMessage]:
    """The history as the pre-model step lets it through."""
    if mode == "failure":  # langchain#33245: keeps a ToolMessage without its AIMessage
        return trim_messages(
            history, strategy="last", max_tokens=HISTORY_BUDGET_TOKENS,
            token_counter=count_tokens_approximately, include_system=True,
        )  # fmt: skip
    if mode == "remedy":
        return trim_keeping_pairs(history, max_tokens=HISTORY_BUDGET_TOKENS, model=model)
    return list(history)


def build_graph(provider_url: str, mode: Mode, model: str) -> Any:
    """The agent's graph: the model node (history fitted first), then the tools node."""
    llm = ChatOpenAI(
        model=model,
        base_url=f"{provider_url}/v1",
        api_key="stand-in",  # type: ignore[arg-type]
        max_retries=0,
        http_client=instrumented_http_client(),
    )
    with_tools = llm.bind_tools(TOOLS)

    def call_model(state: State) -> dict[str, Any]:
        return {"messages": [with_tools.invoke(fit_history(state["messages"], mode, model))]}

    graph = StateGraph(State)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    graph.add_edge("model", END)
    return graph.compile()


def run_trim_agent(provider_url: str, mode: Mode = "plain", model: str = MODEL) -> AgentRun:
    """One run of the agent against the provider at ``provider_url`` (no ``/v1``). A
    request the provider refuses ends the run; its answer says so."""
    graph = build_graph(provider_url, mode, model)
    question: dict[str, Any] = {"messages": [SystemMessage(SYSTEM), HumanMessage(QUESTION)]}
    config: Any = {"callbacks": [CtxledgerCallbackHandler()]}
    state, refused = question, None
    with ctxledger.run(AGENT_NAME):
        try:  # each value is the whole state after a node: the last one is kept
            for value in graph.stream(question, config=config, stream_mode="values"):
                state = value
        except openai.BadRequestError as error:
            refused = error
    messages: list[BaseMessage] = state["messages"]
    replies = [m for m in messages if isinstance(m, AIMessage)]
    call_ids = tuple(str(call["id"]) for reply in replies for call in reply.tool_calls)
    if refused is not None:
        answer = f"the provider refused the request: {refused.message}"
        return AgentRun(answer, call_ids, len(replies) + 1)
    return AgentRun(str(messages[-1].content), call_ids, len(replies))


def script(orders_call_id: str | None = None, customer_call_id: str | None = None) -> list[Step]:
    """What the stand-in answers this agent: both tools at once, then the answer."""
    orders = ToolCall(
        "search_orders", {"status": "refunding"}, id=orders_call_id or new_call_id("call_orders")
    )
    customer = ToolCall(
        "get_customer", {"customer_id": "C-7"}, id=customer_call_id or new_call_id("call_customer")
    )
    return [
        Step(tool_calls=(orders, customer)),
        Step(text="Customer C-7 (gold) has 120 orders in refunding."),
    ]


def run_with_provider(provider_url: str | None, mode: Mode) -> AgentRun:
    return _run_with_provider(provider_url, script, lambda url: run_trim_agent(url, mode))


def main(argv: Sequence[str] | None = None) -> int:
    return example_main(AGENT_NAME, __doc__ or "", argv, run_with_provider)
