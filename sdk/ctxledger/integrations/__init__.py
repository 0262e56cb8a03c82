"""Integrations with agent frameworks, each an extra of its own:

* :mod:`ctxledger.integrations.langchain` (``ctxledger[langchain]``): a LangChain
  callback handler and a trimmer that keeps tool calls and results paired;
* :mod:`ctxledger.integrations.openai_agents` (``ctxledger[openai-agents]``): a tracing
  processor for the OpenAI Agents SDK;
* :mod:`ctxledger.integrations.mcp` (``ctxledger[mcp]``): a client-side hook on the MCP
  ``ClientSession``.

Each module imports its framework; ``import ctxledger`` imports none of them.
"""
