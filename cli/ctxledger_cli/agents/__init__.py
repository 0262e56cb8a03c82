"""Example agents: real loops on the real ``openai`` and ``anthropic`` clients,
instrumented with the SDK in the documented few lines, each with a flag that switches on
one of the seeds' failures and a flag that switches on the remedy.

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

``examples/openai_orders_agent.py``, ``examples/anthropic_kb_agent.py`` and
``examples/openai_sre_agent.py`` run the first three from a clone; they ship here so
that ``ctxledger demo`` can run them from a wheel. They need the ``openai`` and
``anthropic`` clients (the ``server`` extra brings both).
"""
