"""The order-query agent on the ``openai`` client (seed 000): a real tool loop.

    python examples/openai_orders_agent.py            # nothing lost: intact
    python examples/openai_orders_agent.py --failure  # text[:2000]: silent
    python examples/openai_orders_agent.py --remedy   # clip_rows with a marker: declared

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url`` (``ctxledger provider --script examples/scripts/openai_orders.json``).
``--collector-url http://127.0.0.1:4318`` sends the spans to a collector (``ctxledger up``).
The loop itself is ``ctxledger_cli/agents/openai_orders.py``, shipped in the package so
that ``ctxledger demo`` runs it too.
"""

import sys

from ctxledger_cli.agents.openai_orders import main

if __name__ == "__main__":
    sys.exit(main())
