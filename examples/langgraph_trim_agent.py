"""A LangGraph agent whose history is trimmed before each model call.

    python examples/langgraph_trim_agent.py            # no trim: everything arrives
    python examples/langgraph_trim_agent.py --failure  # trim_messages(strategy="last")
    python examples/langgraph_trim_agent.py --remedy   # ctxledger's trim that keeps pairs

The model asks for two tools at once: a large order search and a small customer lookup.
``--failure`` trims the history with ``trim_messages(strategy="last")`` to a token
budget: it keeps the newest messages that fit, so the small ToolMessage stays while
the large one and the AIMessage that issued both calls are cut (langchain#33245). The
provider refuses the orphan with OpenAI's 400; ctxledger reports the small result
``orphaned`` and the large one ``dropped``. ``--remedy`` trims with
:func:`ctxledger.integrations.langchain.trim_keeping_pairs`: the large result's content
becomes the emergency-trim placeholder, declared; every pair stays and the model answers.

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url``; ``--collector-url http://127.0.0.1:4318`` sends the spans to a
collector (``ctxledger up``).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, TypedDict

import openai
from _common import configure, finish, parse_flags, provider, summary
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

import ctxledger
from ctxledger.integrations.langchain import CtxledgerCallbackHandler, trim_keeping_pairs

MODEL = "gpt-4o"
HISTORY_BUDGET_TOKENS = 1_500
ORDERS_CALL, CUSTOMER_CALL = "call_orders_1", "call_customer_1"


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


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build_graph(base_url: str, mode: str) -> Any:
    http_client = openai.DefaultHttpxClient(event_hooks=ctxledger.httpx_event_hooks())
    llm = ChatOpenAI(model=MODEL, base_url=base_url, api_key="x", http_client=http_client)
    model = llm.bind_tools([search_orders, get_customer])

    def call_model(state: State) -> dict[str, Any]:
        history = state["messages"]
        if mode == "failure":
            history = trim_messages(
                history, strategy="last", max_tokens=HISTORY_BUDGET_TOKENS,
                token_counter=count_tokens_approximately, include_system=True,
            )  # fmt: skip
        elif mode == "remedy":
            history = trim_keeping_pairs(history, max_tokens=HISTORY_BUDGET_TOKENS, model=MODEL)
        return {"messages": [model.invoke(history)]}

    graph = StateGraph(State)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([search_orders, get_customer]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    graph.add_edge("model", END)
    return graph.compile()


def run_agent(mode: str, base_url: str | None = None) -> dict[str, Any]:
    """One run (``mode``: plain, failure or remedy); its trace id, calls and outcome."""
    from ctxledger_cli.provider import ToolCall

    script = [
        [
            ToolCall("search_orders", {"status": "refunding"}, id=ORDERS_CALL),
            ToolCall("get_customer", {"customer_id": "C-7"}, id=CUSTOMER_CALL),
        ],
        "Customer C-7 (gold) has 120 orders in refunding.",
    ]
    with provider(base_url, script) as url, ctxledger.run("langgraph-trim-agent") as run:
        graph = build_graph(url, mode)
        question = [SystemMessage("You answer order questions."), HumanMessage("C-7's refunds?")]
        try:
            final = graph.invoke(
                {"messages": question}, config={"callbacks": [CtxledgerCallbackHandler()]}
            )
            outcome = str(final["messages"][-1].content)
        except openai.BadRequestError as refused:
            outcome = f"the provider refused the request: {refused.message}"
    return summary(run, [ORDERS_CALL, CUSTOMER_CALL], outcome)


def main() -> int:
    flags = parse_flags(__doc__.splitlines()[0])
    configure("langgraph-trim-agent", flags)
    return finish(run_agent(flags.mode, flags.provider_url))


if __name__ == "__main__":
    sys.exit(main())
