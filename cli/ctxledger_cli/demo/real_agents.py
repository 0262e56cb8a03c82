"""The seeds' incidents that run as real agent loops on the real clients: the example
agents (:mod:`ctxledger_cli.agents`) on the ``openai`` and ``anthropic`` clients, each
against a provider stand-in started in this process for the run. No network, no keys.
The agents import the clients, so they are imported only when an incident runs
(``ctxledger demo`` first checks that the clients are installed). The incidents on agent
frameworks are :mod:`.framework_agents`.

* seed 004: the knowledge-base agent with seed 004's context manager (``failure``).
* seed 000: the order-query agent with seed 000's serializer, which writes the first 20
  of 200 rows, declared to the SDK but with no marker for the model.
* seed 001: the SRE agent against a stand-in whose window the fourth request outgrows;
  the provider refuses it, the emergency trim turns the oldest result into its
  placeholder and the retry is answered (``remedy``: declared); or the naive trim
  deletes that result and keeps its call, and the provider refuses the retry with its
  pairing 400 (``failure``: orphaned).
* dropped result: the ticket agent whose pair-safe context manager drops the oversized
  export with its call, telling nobody (``failure``: dropped).
* ollama window: the order agent against a stand-in that discards the oldest messages of
  an over-long prompt as ollama does at its ``num_ctx`` and answers 200: the orders
  result leaves the process whole and falls out at the model server (``failure``:
  dropped, stage ``received``).
"""

from __future__ import annotations

from ctxledger_cli.demo import seed_000_first_rows as seed_000
from ctxledger_cli.demo.dropped_result import DROP_CALL_IDS
from ctxledger_cli.demo.seed_001_context_overflow import (
    NAIVE_TRIM_CALL_IDS,
    SRE_CONTEXT_WINDOW,
    TRIM_CALL_IDS,
)
from ctxledger_cli.demo.seed_004_silent_loss import LOOKUP_CALL_ID, SEARCH_CALL_ID
from ctxledger_cli.provider import ProviderStandIn


def load_agents() -> None:
    """Import the agents and their clients now (seconds, once per process), so that no
    import falls between the incidents of one demo run."""
    from ctxledger_cli.agents import (
        anthropic_kb,
        ollama_window,
        openai_orders,
        openai_sre,
        openai_tickets,
    )

    del anthropic_kb, ollama_window, openai_orders, openai_sre, openai_tickets


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


def seed_001_emergency_trim(model: str | None = None) -> None:
    """Seed 001: the fourth request is refused as too long; the retry carries the oldest
    result as the placeholder, pairing intact (declared)."""
    from ctxledger_cli.agents import openai_sre

    script = openai_sre.script(TRIM_CALL_IDS)
    with ProviderStandIn(script=script, context_window=SRE_CONTEXT_WINDOW) as stand_in:
        openai_sre.run_sre_agent(stand_in.url, "remedy", model or openai_sre.MODEL)


def seed_001_naive_trim(model: str | None = None) -> None:
    """Seed 001's warning: the same overflow, trimmed by deleting the oldest result; its
    call is left without a result (orphaned) and the provider refuses every retry."""
    from ctxledger_cli.agents import openai_sre

    script = openai_sre.script(NAIVE_TRIM_CALL_IDS)
    with ProviderStandIn(script=script, context_window=SRE_CONTEXT_WINDOW) as stand_in:
        openai_sre.run_sre_agent(stand_in.url, "failure", model or openai_sre.MODEL)


def dropped_result(model: str | None = None) -> None:
    """Two parallel calls in step 1; step 2's request carries only the small one."""
    from ctxledger_cli.agents import openai_tickets

    with ProviderStandIn(script=openai_tickets.script(DROP_CALL_IDS)) as stand_in:
        openai_tickets.run_ticket_agent(stand_in.url, "failure", model or openai_tickets.MODEL)


#: The ollama window incident's two parallel calls: the orders (dropped at the server)
#: and the invoice (kept).
WINDOW_CALL_IDS = ("call_orders_window", "call_invoice_window")


def ollama_window(model: str | None = None) -> None:
    """The model server's layer: the request leaves whole, the server keeps what fits
    its 2,048-token window from the end and reports it in ``prompt_tokens``."""
    from ctxledger_cli.agents import ollama_window as agent

    with agent.stand_in("failure", WINDOW_CALL_IDS) as stand_in:
        agent.run_window_agent(stand_in.url, "failure", model or agent.MODEL)
