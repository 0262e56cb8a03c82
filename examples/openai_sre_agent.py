"""The SRE agent on the ``openai`` client (seed 001): a real tool loop whose fourth
request outgrows the provider's context window.

    python examples/openai_sre_agent.py            # the model's full window: intact
    python examples/openai_sre_agent.py --failure  # delete the oldest result: orphaned
    python examples/openai_sre_agent.py --remedy   # emergency trim, placeholder: declared

With a flag the stand-in started in this process has seed 001's small window and
refuses the fourth request with OpenAI's ``context_length_exceeded`` 400. ``--failure``
deletes the oldest tool message and keeps its call: the provider refuses the retry with
its pairing 400 and the run stops. ``--remedy`` retries through
``ctxledger.remedies.call_with_emergency_trim``: the oldest result becomes the
placeholder, every call keeps its result, the model answers. ``--provider-url`` uses a
running provider instead (``ctxledger provider --context-window 10000 --script
examples/scripts/openai_sre.json``); ``--collector-url http://127.0.0.1:4318`` sends the
spans to a collector (``ctxledger up``). The loop itself is
``ctxledger_cli/agents/openai_sre.py``, shipped in the package so that ``ctxledger demo``
runs it too.
"""

import sys

from ctxledger_cli.agents.openai_sre import main

if __name__ == "__main__":
    sys.exit(main())
