"""MCP clients (the ``[mcp]`` extra).

:func:`instrument_session` hooks an ``mcp.ClientSession``: every ``call_tool`` result is
measured as ``original``, exactly as the MCP server returned it, before the client
truncates it (``MAX_MCP_OUTPUT_TOKENS``-style limits), reformats it or drops it::

    session = instrument_session(ClientSession(read, write))
    result = await session.call_tool("search", {"q": "x"}, tool_call_id=call.id)

The call id links the MCP result to the model's tool call: pass ``tool_call_id=`` (it
is not sent to the server) or call inside ``with ctxledger.tool_call(call.id):``. The
client's own processing and the request are measured as usual (``measure_messages``,
the httpx hook), so a cut between the server and the model is judged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from ctxledger._api import measure
from ctxledger._runs import current_tool_call
from ctxledger._safety import never_raises

__all__ = ["instrument_session", "result_text"]


def result_text(result: CallToolResult) -> str:
    """The text a client forwards to the model: the text blocks joined by newlines, else
    the structured content as JSON."""
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structuredContent is not None:
        return json.dumps(result.structuredContent, ensure_ascii=False)
    return ""


@never_raises(None)
def _measure_result(name: str, result: Any, tool_call_id: str | None) -> None:
    if not isinstance(result, CallToolResult):
        return
    in_context = current_tool_call()
    call_id = tool_call_id or (in_context[0] if in_context else None)
    if call_id:
        measure("original", result_text(result), tool_call_id=call_id, tool_name=name)


def instrument_session(session: ClientSession) -> ClientSession:
    """Measure every ``session.call_tool`` result as ``original``; returns the session.
    Its ``call_tool`` also takes ``tool_call_id=``. Calling it twice hooks once."""
    if getattr(session, "_ctxledger_instrumented", False):
        return session
    original_call: Callable[..., Awaitable[CallToolResult]] = session.call_tool

    @functools.wraps(original_call)
    async def call_tool(
        name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any
    ) -> CallToolResult:
        tool_call_id = kwargs.pop("tool_call_id", None)
        result = await original_call(name, arguments, *args, **kwargs)
        _measure_result(name, result, tool_call_id)
        return result

    session.call_tool = call_tool  # type: ignore[method-assign]
    session._ctxledger_instrumented = True  # type: ignore[attr-defined]
    return session
