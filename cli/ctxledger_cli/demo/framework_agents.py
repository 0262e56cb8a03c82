"""The incidents that run on agent frameworks: the framework agents of
:mod:`ctxledger_cli.agents`, each against a provider stand-in started in this process
for the run, with fixed call ids from the stand-in's script. No network, no keys.

* ``orphaned_call``: the LangGraph agent with ``trim_messages(strategy="last")``
  (langchain#33245, ``failure``): the small result is left without its call
  (``orphaned``, the stand-in refuses the request with OpenAI's 400), the large one is
  cut away with the call (``dropped``).
* ``seed_002_log_clip``: the OpenAI Agents SDK agent on seed 002's log, clipped to head
  40 + tail 20 lines with a visible marker (``remedy``): ``declared``.
* ``clean_journeys``: the MCP agent (a ticket search and a ticket lookup from a local MCP
  server over stdio), every result forwarded whole (``plain``): ``intact``.

The frameworks come with the ``agents`` extra; an incident whose framework is missing is
skipped (:func:`missing_framework` says which and what to install). The agents import
their framework, so they are imported only when an incident runs.
"""

from __future__ import annotations

import importlib.metadata

from ctxledger_cli.demo.seed_002_log_clip import LOG_CALL_ID
from ctxledger_cli.provider import ProviderStandIn
from ctxledger_cli.server_extra import install_hint

ORPHAN_ORDERS_CALL_ID, ORPHAN_CUSTOMER_CALL_ID = "call_orders_orphan", "call_customer_orphan"
CLEAN_CALL_IDS = ("call_tickets_clean", "call_ticket_clean")

AGENTS_EXTRA_HINT = install_hint("agents")

#: Incident -> the framework it runs on and the distributions that bring it.
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "orphaned_call": ("LangGraph", ("langgraph", "langchain-openai", "langchain-core")),
    "seed_002_log_clip": ("the OpenAI Agents SDK", ("openai-agents",)),
    "clean_journeys": ("MCP", ("mcp",)),
}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def missing_framework(incident: str) -> str | None:
    """Why ``incident`` cannot run here, in one line naming the extra to install; None
    when it can (or needs no framework)."""
    framework, distributions = FRAMEWORKS.get(incident, ("", ()))
    missing = [name for name in distributions if not _installed(name)]
    if not missing:
        return None
    return (
        f"skipping {incident}: it runs on {framework} ({', '.join(missing)} missing): "
        f"{AGENTS_EXTRA_HINT}"
    )


def load_framework_agents() -> None:
    """Import the framework agents that can run (seconds, once per process), so that no
    import falls between the incidents of one demo run."""
    if missing_framework("orphaned_call") is None:
        from ctxledger_cli.agents import langgraph_trim

        del langgraph_trim
    if missing_framework("seed_002_log_clip") is None:
        from ctxledger_cli.agents import openai_agents_log

        del openai_agents_log
    if missing_framework("clean_journeys") is None:
        from ctxledger_cli.agents import mcp_tickets

        del mcp_tickets


def orphaned_call(model: str | None = None) -> None:
    """LangGraph's ``trim_messages(strategy="last")`` keeps the small ToolMessage and cuts
    the AIMessage that called it: ``orphaned``; the large result is gone: ``dropped``."""
    from ctxledger_cli.agents import langgraph_trim

    steps = langgraph_trim.script(ORPHAN_ORDERS_CALL_ID, ORPHAN_CUSTOMER_CALL_ID)
    with ProviderStandIn(script=steps) as stand_in:
        langgraph_trim.run_trim_agent(stand_in.url, "failure", model or langgraph_trim.MODEL)


def seed_002_log_clip(model: str | None = None) -> None:
    """Seed 002: the 500-line log clipped to head 40 + tail 20 lines with a marker; the
    model sees the marker and the error stack at the end: ``declared``."""
    from ctxledger_cli.agents import openai_agents_log

    with ProviderStandIn(script=openai_agents_log.script(LOG_CALL_ID)) as stand_in:
        openai_agents_log.run_log_agent(stand_in.url, "remedy", model or openai_agents_log.MODEL)


def clean_journeys(model: str | None = None) -> None:
    """A large MCP search and a small lookup, both forwarded whole: ``intact``."""
    from ctxledger_cli.agents import mcp_tickets

    with ProviderStandIn(script=mcp_tickets.script(*CLEAN_CALL_IDS)) as stand_in:
        mcp_tickets.run_ticket_agent(stand_in.url, "plain", model or mcp_tickets.MODEL)
