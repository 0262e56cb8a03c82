"""A local stand-in for the LLM providers, close enough for the official ``openai`` and
``anthropic`` clients (plain and streaming), that behaves like the real providers where
ctxledger cares. No network, no keys.

APIs (``/v1`` in front is optional):

* ``POST /v1/chat/completions`` — OpenAI Chat Completions (``stream`` and
  ``stream_options.include_usage`` too).
* ``POST /v1/responses`` — OpenAI Responses (``stream``, ``previous_response_id``).
* ``POST /v1/messages`` and ``/v1/messages/count_tokens`` — Anthropic Messages.

Like the real providers it:

* counts each request's tokens with the model's encoding (:mod:`.tokens`: o200k_base or
  cl100k_base as the SDK picks them; Claude models approximated with cl100k_base) and
  refuses a prompt over the context window with the provider's own 400
  (``context_length_exceeded``; Anthropic's ``prompt is too long: N tokens > M maximum``);
* refuses broken tool-call pairing with the provider's own 400 (:mod:`.pairing`, bodies in
  :mod:`.errors`, which cites where the wording comes from);
* answers from a script (:mod:`.script`): each request takes the next step, text or tool
  calls, so an agent loop runs several steps; once the script is used up each request is
  refused with a 409 in the provider's own error shape saying so (``loop=True`` starts
  the script again instead, ``POST /_ctxledger/reset`` or :meth:`ProviderStandIn.reset`
  rewinds it); with no script at all every answer is ``"ok"``;
* reports ``usage`` truthfully: the prompt tokens it counted, the completion tokens of
  its answer;
* records the exact bytes of every request (:attr:`ProviderStandIn.requests`).

With ``silent_front_discard=True`` (``--silent-front-discard``) an over-long prompt is
not refused: like ollama#3839 the oldest messages (system messages excepted) are dropped
until it fits, the answer is a 200, and ``usage`` counts only what was kept
(:attr:`ProviderStandIn.discards` tells what happened).

Python::

    from ctxledger_cli.provider import ProviderStandIn, ToolCall

    with ProviderStandIn(script=[ToolCall("query_orders", {"customer": "C-1"}), "3 orders"]) as p:
        openai_client = openai.OpenAI(base_url=p.openai_base_url, api_key="x")
        anthropic_client = anthropic.Anthropic(base_url=p.anthropic_base_url, api_key="x")
        ...
        p.requests[0].body          # the exact bytes the first request carried

``ProviderStandIn(host, port=0, *, script=(), context_window=None,
silent_front_discard=False, loop=False)``; ``.script(*steps)`` queues more steps;
``.reset()`` rewinds the script (``.reset_url`` does it over HTTP); ``.url``,
``.openai_base_url`` (``…/v1``, also ``.base_url``), ``.anthropic_base_url``;
``.requests``; ``.discards``. A step is a :class:`Step`, a text, a :class:`ToolCall`
(``ToolCall(name, arguments, id=None)``) or a list of them. :func:`load_script` reads a
JSON or YAML script file.

pytest: ``pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]`` gives the
``provider`` fixture (a started stand-in, stopped after the test).

Command line: ``ctxledger provider [--host H] [--port P] [--context-window N]
[--silent-front-discard | --token-truncate | --refuse-over-window | --stop-at-limit]
[--script FILE] [--loop]`` (docs/provider-stand-in.md lists every flag).
"""

from __future__ import annotations

from ctxledger_cli.provider.engine import Discard, RecordedRequest
from ctxledger_cli.provider.script import Step, ToolCall, load_script
from ctxledger_cli.provider.server import ProviderStandIn
from ctxledger_cli.provider.tokens import count_messages, count_text, encoding_for, tokenizer_used

__all__ = [
    "Discard",
    "ProviderStandIn",
    "RecordedRequest",
    "Step",
    "ToolCall",
    "count_messages",
    "count_text",
    "encoding_for",
    "load_script",
    "tokenizer_used",
]
