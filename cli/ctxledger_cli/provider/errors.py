"""The providers' own error bodies, word for word as their APIs send them.

The wording was taken from real responses quoted in public issue threads:

* OpenAI Chat Completions, context: NextChat#625, crewAI-examples#121 (``param``
  ``messages``, ``code`` ``context_length_exceeded``).
* OpenAI Chat Completions, pairing: langchain#33245 and the LiteLLM thread litellm#10696
  ("… did not have response messages: …"; the reverse case keeps OpenAI's typo
  "preceeding").
* OpenAI Responses, context: dyad#1672 and codex2api#415 ("Your input exceeds the context
  window of this model…", ``param`` ``input``); pairing: continue#10092 and vscode#320060
  ("No tool call found for function call output with call_id …."), opencode#16717 and
  codex#46193 for the reverse ("No tool output found for function call …").
* Anthropic Messages, context: claude-code#12186 and #14195 ("prompt is too long: N tokens
  > M maximum"); pairing: claude-code#1237 and #5989 (``tool_use`` without ``tool_result``,
  ids joined by ", "), claude-code#13460 and Anthropic.SDK#184 (the reverse case).
* llama.cpp's server, context (``refuse_over_window``): ``tools/server/server-context.cpp``
  refuses a prompt of ``n_ctx`` tokens or more with "request (N tokens) exceeds the
  available context size (M tokens), try increasing it" and ``ERROR_TYPE_EXCEED_CONTEXT_SIZE``,
  which ``format_error_response`` writes as ``code`` 400 and ``type``
  ``exceed_context_size_error``; ``server-task.cpp`` adds ``n_prompt_tokens`` and ``n_ctx``.
* ollama, ``truncate: false``: the runner's ``errorInputTooLong``, "the input length
  exceeds the context length", answered as ``{"error": …}`` with a 400.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_request_ids = itertools.count(1)


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer: its status, JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def openai_error(
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    error_type: str = "invalid_request_error",
    status: int = 400,
) -> Refusal:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return Refusal(status, body)


def anthropic_error(
    message: str, *, error_type: str = "invalid_request_error", status: int = 400
) -> Refusal:
    request_id = f"req_standin{next(_request_ids):012d}"
    body = {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }
    return Refusal(status, body, {"request-id": request_id})


def chat_context_exceeded(window: int, prompt_tokens: int) -> Refusal:
    return openai_error(
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages.",
        param="messages",
        code="context_length_exceeded",
    )


def responses_context_exceeded() -> Refusal:
    return openai_error(
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again.",
        param="input",
        code="context_length_exceeded",
    )


def anthropic_context_exceeded(window: int, input_tokens: int) -> Refusal:
    return anthropic_error(f"prompt is too long: {input_tokens} tokens > {window} maximum")


def llama_context_exceeded(n_prompt_tokens: int, n_ctx: int) -> Refusal:
    """llama.cpp's own shape, not OpenAI's: ``code`` is the HTTP status, the counts are
    fields of the error, and the same body comes from ``/completion`` and chat
    completions."""
    message = (
        f"request ({n_prompt_tokens} tokens) exceeds the available context size "
        f"({n_ctx} tokens), try increasing it"
    )
    body = {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n_prompt_tokens,
            "n_ctx": n_ctx,
        }
    }
    return Refusal(400, body)


def ollama_input_too_long() -> Refusal:
    """ollama's error body is a bare string under ``error``, with no counts."""
    return Refusal(400, {"error": "the input length exceeds the context length"})


def chat_missing_tool_responses(index: int, call_ids: Sequence[str]) -> Refusal:
    return openai_error(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(call_ids),
        param=f"messages.[{index}].role",
    )


def chat_orphan_tool_message(index: int) -> Refusal:
    return openai_error(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'.",
        param=f"messages.[{index}].role",
    )


def responses_orphan_output(call_id: str) -> Refusal:
    return openai_error(
        f"No tool call found for function call output with call_id {call_id}.", param="input"
    )


def responses_missing_output(call_id: str) -> Refusal:
    return openai_error(f"No tool output found for function call {call_id}.", param="input")


def anthropic_missing_tool_results(index: int, tool_use_ids: Sequence[str]) -> Refusal:
    return anthropic_error(
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
        f"after: {', '.join(tool_use_ids)}. Each `tool_use` block must have a corresponding "
        "`tool_result` block in the next message."
    )


def anthropic_orphan_tool_result(index: int, block: int, tool_use_id: str) -> Refusal:
    return anthropic_error(
        f"messages.{index}.content.{block}: unexpected `tool_use_id` found in `tool_result` "
        f"blocks: {tool_use_id}. Each `tool_result` block must have a corresponding "
        "`tool_use` block in the previous message."
    )


def script_used_up(turns: int, reset_url: str, *, anthropic: bool) -> Refusal:
    """The stand-in's own error (no provider sends it), in the provider's shape: 409, and
    ``x-should-retry: false`` so that the clients do not retry what cannot succeed."""
    message = (
        f"ctxledger provider: the script is used up after {turns} "
        f"turn{'s' if turns != 1 else ''}; to rerun it, POST {reset_url} to rewind it "
        "(or start the stand-in with --loop)"
    )
    if anthropic:
        refusal = anthropic_error(message, status=409)
    else:
        refusal = openai_error(message, code="script_exhausted", status=409)
    return Refusal(refusal.status, refusal.body, {**refusal.headers, "x-should-retry": "false"})


def malformed(message: str, *, anthropic: bool) -> Refusal:
    return anthropic_error(message) if anthropic else openai_error(message)
