"""What a fragment of docs/instrumenting.md takes from the reader's own agent (the
``<!-- docs-test: context instrumenting -->`` blocks run after this, in one script): a tool
call as the OpenAI client gives it, an Anthropic ``tool_use`` block, the rows and hits a
tool returned, the messages about to be sent, a LangGraph graph. The fragments' own calls
into ctxledger are real: a signature or name the docs get wrong fails the test."""

import json
import os
from types import SimpleNamespace

import openai
import pytest
from langchain_openai import ChatOpenAI

import ctxledger

ctxledger.configure(service_name="docs-agent", export=False)
# The reader's provider keys (the clients refuse to start without one).
os.environ.setdefault("OPENAI_API_KEY", "sk-docs")
os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-docs")

MODEL = "gpt-4o"
TOOLS = [{"type": "function", "function": {"name": "search_orders", "parameters": {}}}]
rows = [{"id": f"A-{i:04d}", "status": "refunding"} for i in range(80)]
hits = [{"id": f"doc-{i}", "score": 1 - i / 10} for i in range(5)]
call = SimpleNamespace(
    id="call_docs_1",
    function=SimpleNamespace(name="search_orders", arguments=json.dumps({"status": "refunding"})),
)
block = SimpleNamespace(id="toolu_docs_1", name="search_orders", input={"status": "refunding"})
issued = {
    "id": call.id,
    "type": "function",
    "function": {"name": "search_orders", "arguments": "{}"},
}
messages = [
    {"role": "user", "content": "Which orders are refunding?"},
    {"role": "assistant", "tool_calls": [issued]},
    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(rows[:3])},
]
outgoing = messages


class _Orders:
    def orders(self, status: str) -> list[dict[str, str]]:
        return [row for row in rows if row["status"] == status]


db = _Orders()


@ctxledger.tool
def search_orders(status: str) -> dict:
    return {"results": db.orders(status=status)}


class _Graph:
    """A compiled LangGraph stands here: invoked with the callbacks the fragment passes."""

    def invoke(self, state: dict, config: dict) -> dict:
        assert config["callbacks"], "the fragment passes ctxledger's callback handler"
        return state


graph, state = _Graph(), {"messages": []}
assert pytest and openai and ChatOpenAI  # the fragments use them as the reader's agent has
