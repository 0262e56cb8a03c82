"""The seeds' incidents that run as real agent loops on the real clients: the example
agents (:mod:`ctxledger_cli.agents`) on the ``openai`` and ``anthropic`` clients, each
against a provider stand-in started in this process for the run. No network, no keys.
The agents import the clients, so they are imported only when an incident runs
(``ctxledger demo`` first checks that the clients are installed). The incidents on agent
frameworks are :mod:`.framework_agents`.

* seed 004: the knowledge-base agent with seed 004's context manager (``failure``).
* seed 000: the order-query agent with seed 000's serializer, which writes the first 20
  of 200 rows, declared to the SDK but with no marker for the model.
"""

from __future__ import annotations

from ctxledger_cli.demo import seed_000_first_rows as seed_000
from ctxledger_cli.demo.seed_004_silent_loss import LOOKUP_CALL_ID, SEARCH_CALL_ID
from ctxledger_cli.provider import ProviderStandIn


def load_agents() -> None:
    """Import the agents and their clients now (seconds, once per process), so that no
    import falls between the incidents of one demo run."""
    from ctxledger_cli.agents import anthropic_kb, openai_orders

    del anthropic_kb, openai_orders


def run_seed_004(model: str | None = None) -> None:
    """Seed 004: 50 snippets retrieved, 20 seen, said nowhere (silent); then a small
    lookup that arrives intact, while the trimmed search result travels again."""
    from ctxledger_cli.agents import anthropic_kb

    with ProviderStandIn(script=anthropic_kb.script(SEARCH_CALL_ID, LOOKUP_CALL_ID)) as stand_in:
        anthropic_kb.run_kb_agent(stand_in.url, "failure", model or anthropic_kb.MODEL)


def _first_rows(days: int, call_id: str) -> str:
    result = seed_000.query_orders(days, tool_call_id=call_id)
    return seed_000.serialize_first_rows(result, call_id)


def seed_000_first_rows(model: str | None = None) -> None:
    """Seed 000: a declared head-rows cut with no marker: 180 of 200 orders gone, unbeknown."""
    from ctxledger_cli.agents import openai_orders

    with ProviderStandIn(script=openai_orders.script(seed_000.ORDERS_CALL_ID)) as stand_in:
        openai_orders.run_orders_agent(
            stand_in.url, "plain", model or openai_orders.MODEL, order_tool=_first_rows
        )
