"""The log agent on the OpenAI Agents SDK (seed 002's log): a real ``Runner`` loop.

    python examples/openai_agents_agent.py            # nothing cut: intact
    python examples/openai_agents_agent.py --failure  # cut to 500 chars, no word: silent
    python examples/openai_agents_agent.py --remedy   # head 40 + tail 20 lines, marked: declared

Runs against a provider stand-in (Responses API) started in this process (no network, no
keys), or ``--provider-url`` (``ctxledger provider --script
examples/scripts/openai_agents_log.json``). ``--collector-url http://127.0.0.1:4318``
sends the spans to a collector (``ctxledger up``). The agent itself is
``ctxledger_cli/agents/openai_agents_log.py``, shipped in the package so that
``ctxledger demo`` runs it too (the ``[agents]`` extra).
"""

import sys

from ctxledger_cli.agents.openai_agents_log import main

if __name__ == "__main__":
    sys.exit(main())
