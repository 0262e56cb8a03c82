"""The agent whose tools come from a local MCP server (stdio): a real tool loop.

    python examples/mcp_agent.py            # the MCP results reach the model: intact
    python examples/mcp_agent.py --failure  # the client cuts them to its limit: silent
    python examples/mcp_agent.py --remedy   # whole rows kept, marked truncated: declared

Runs against a provider stand-in started in this process (no network, no keys), or
``--provider-url`` (``ctxledger provider --script examples/scripts/mcp_tickets.json``).
``--collector-url http://127.0.0.1:4318`` sends the spans to a collector (``ctxledger up``).
The loop is ``ctxledger_cli/agents/mcp_tickets.py`` and its server
``python -m ctxledger_cli.agents.mcp_ticket_server``, shipped in the package so that
``ctxledger demo`` runs them too (the ``[agents]`` extra).
"""

import sys

from ctxledger_cli.agents.mcp_tickets import main

if __name__ == "__main__":
    sys.exit(main())
