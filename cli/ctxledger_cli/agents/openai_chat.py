"""What the agents on the ``openai`` client share: a client instrumented with the SDK's
httpx hook (``sent`` and the request manifest), and reading an assistant turn."""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessage

import ctxledger
from ctxledger_cli.agents.common import shared_ssl_context


def chat_tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    """A Chat Completions tool definition: a function whose arguments are all required,
    each given as ``name="json type"``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


def instrumented_http_client() -> openai.DefaultHttpxClient:
    """The httpx client every request of an agent goes through, hooked by the SDK."""
    return openai.DefaultHttpxClient(
        event_hooks=ctxledger.httpx_event_hooks(), verify=shared_ssl_context()
    )


def instrumented_client(provider_url: str) -> openai.OpenAI:
    """An ``openai`` client for the provider at ``provider_url`` (no ``/v1``), no retries:
    a refusal reaches the agent's loop as the provider gave it."""
    return openai.OpenAI(
        base_url=f"{provider_url}/v1",
        api_key="stand-in",
        max_retries=0,
        http_client=instrumented_http_client(),
    )


def instrumented_async_client(provider_url: str) -> openai.AsyncOpenAI:
    """:func:`instrumented_client` for asyncio loops (the SDK's async httpx hooks)."""
    return openai.AsyncOpenAI(
        base_url=f"{provider_url}/v1",
        api_key="stand-in",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(
            event_hooks=ctxledger.httpx_event_hooks(is_async=True), verify=shared_ssl_context()
        ),
    )


def assistant_turn(message: ChatCompletionMessage) -> dict[str, Any]:
    """The assistant message as the history keeps it."""
    return message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})


def requested_calls(message: ChatCompletionMessage) -> list[tuple[str, str, dict[str, Any]]]:
    """The tool calls the model asked for: (call id, tool name, arguments)."""
    return [
        (call.id, call.function.name, json.loads(call.function.arguments or "{}"))  # type: ignore[union-attr]
        for call in message.tool_calls or ()
    ]
