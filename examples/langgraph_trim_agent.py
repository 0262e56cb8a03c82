"""The LangGraph agent whose history is trimmed before each model call: a real graph.

    python examples/langgraph_trim_agent.py            # no trim: intact
    python examples/langgraph_trim_agent.py --failure  # trim_messages(strategy="last"):
                                                       # orphaned and dropped (langchain#33245)
    python examples/langgraph_trim_agent.py --remedy   # ctxledger's trim that keeps pairs: declared

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url`` (``ctxledger provider --script examples/scripts/langgraph_trim.json``).
``--collector-url http://127.0.0.1:4318`` sends the spans to a collector (``ctxledger up``).
The graph itself is ``ctxledger_cli/agents/langgraph_trim.py``, shipped in the package so
that ``ctxledger demo`` runs it too (the ``[agents]`` extra).
"""

import sys

from ctxledger_cli.agents.langgraph_trim import main

if __name__ == "__main__":
    sys.exit(main())
