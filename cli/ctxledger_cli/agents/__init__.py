"""Example agents: real loops on the real ``openai`` and ``anthropic`` clients and on
agent frameworks, instrumented with the SDK in the documented few lines, each with a flag
that switches on one of the seeds' failures and a flag that switches on the remedy.

* :mod:`.openai_orders` — seed 000's order query; failure ``text[:2000]`` (silent),
  remedy the SDK's row clipping with a marker (declared).
* :mod:`.anthropic_kb` — seed 004's 50 snippets; failure a context manager that breaks
  out at 16,000 characters (silent), remedy the same budget through the SDK's row
  clipping with a marker (declared).
* :mod:`.openai_sre` — seed 001's SRE agent whose fourth request outgrows the window;
  failure a naive trim that deletes the oldest result and keeps its call (orphaned),
  remedy the SDK's emergency trim with its placeholder (declared).
* :mod:`.openai_tickets` — a context manager that drops an oversized exchange, call and
  result, telling nobody (dropped); remedy the SDK's row clipping (declared).
* :mod:`.langgraph_trim` — LangGraph; failure ``trim_messages(strategy="last")``
  (langchain#33245: orphaned and dropped), remedy ctxledger's trim that keeps pairs
  (declared).
* :mod:`.openai_agents_log` — the OpenAI Agents SDK on seed 002's log; failure every tool
  output cut to 500 characters (silent), remedy seed 002's head 40 + tail 20 lines with
  a marker (declared).
* :mod:`.mcp_tickets` — an MCP client calling :mod:`.mcp_ticket_server` over stdio;
  failure the client cuts the result to its output limit (silent), remedy whole rows
  within the limit, marked (declared).

``examples/*_agent.py`` run them from a clone; they ship here so that ``ctxledger demo``
can run them from a wheel. The loops on the clients need the ``openai`` and
``anthropic`` clients (the ``server`` extra brings both), the frameworks come with the
``agents`` extra.
"""
