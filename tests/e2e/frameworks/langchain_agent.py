"""A LangChain tool loop (``ChatOpenAI.bind_tools``, the tool's ``ToolMessage``) traced
by OpenInference's LangChain instrumentation only.

    python langchain_agent.py CASE[,CASE...] ENDPOINT...

A case is a pipeline (agent_kit.PIPELINES). OpenInference's content settings
(``OPENINFERENCE_HIDE_*``) come from the environment. Prints {case: {trace_id, calls}}.
"""

from __future__ import annotations

import json

from agent_kit import ROWS, base_url, cases, cut_rows, finish, tracer_provider
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor

provider = tracer_provider("langchain-agent")
LangChainInstrumentor().instrument(tracer_provider=provider)
tracer = provider.get_tracer("orders-agent")


@tool
def search_orders(status: str) -> str:
    """Search orders by status."""
    return json.dumps([{**row, "status": status} for row in ROWS], ensure_ascii=False)


model = ChatOpenAI(model="gpt-4o", base_url=base_url(), api_key="test").bind_tools([search_orders])
found = {}
for case in cases():
    with tracer.start_as_current_span(f"orders-agent {case}") as root:
        messages: list = [HumanMessage(f"Which orders are refunding? ({case})")]
        calls = []
        for _ in range(5):
            answer = model.invoke(messages)
            messages.append(answer)
            if not answer.tool_calls:
                break
            for call in answer.tool_calls:
                result = search_orders.invoke(call)  # a ToolMessage: its own TOOL span
                result.content = cut_rows(result.content, case)
                messages.append(result)
                calls.append(call["id"])
        found[case] = {"trace_id": format(root.get_span_context().trace_id, "032x"), "calls": calls}
finish(provider, found)
