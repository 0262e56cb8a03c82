"""The knowledge-base agent on the ``anthropic`` client (seed 004): a real tool loop.

    python examples/anthropic_kb_agent.py            # nothing lost: intact
    python examples/anthropic_kb_agent.py --failure  # breaks out at 16,000 chars: silent
    python examples/anthropic_kb_agent.py --remedy   # same budget, clip_rows: declared

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url`` (``ctxledger provider --script examples/scripts/anthropic_kb.json``).
``--collector-url http://127.0.0.1:4318`` sends the spans to a collector (``ctxledger up``).
The loop itself is ``ctxledger_cli/agents/anthropic_kb.py``, shipped in the package so
that ``ctxledger demo`` runs it too.
"""

import sys

from ctxledger_cli.agents.anthropic_kb import main

if __name__ == "__main__":
    sys.exit(main())
