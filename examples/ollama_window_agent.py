"""The order agent against a model server that silently discards the oldest messages of
an over-long prompt (ollama's ``num_ctx``): stage ``received`` finds what fell out.

    python examples/ollama_window_agent.py            # the model's full window: intact
    python examples/ollama_window_agent.py --failure  # the server drops the orders: dropped
    python examples/ollama_window_agent.py --remedy   # emergency trim to a budget: declared

With a flag the stand-in started in this process discards like ollama at a 2,048-token
window and answers 200 with a truthful ``prompt_tokens``. ``--failure`` sends the whole
history: the orders result falls out at the server, and the ledger names it ``dropped``
at the model server. ``--remedy`` trims the request under the window before it leaves
(``ctxledger.remedies.emergency_trim(messages, target_tokens=...)``): the oldest result
becomes its placeholder, declared, and the server reads every token sent.
``--collector-url http://127.0.0.1:4318`` sends the spans to a collector (``ctxledger up``).
The loop itself is ``ctxledger_cli/agents/ollama_window.py``, shipped in the package so
that ``ctxledger demo`` runs it too.
"""

import sys

from ctxledger_cli.agents.ollama_window import main

if __name__ == "__main__":
    sys.exit(main())
