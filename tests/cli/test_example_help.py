"""The example agents' ``--help``: plain text, as a terminal shows it — no
reStructuredText markup, the paragraphs kept apart and the command line on its own."""

from __future__ import annotations

import importlib
import re

import pytest

from ctxledger_cli.agents.help_text import plain_help

AGENTS = (
    "anthropic_kb",
    "langgraph_trim",
    "mcp_tickets",
    "ollama_window",
    "openai_agents_log",
    "openai_orders",
    "openai_sre",
)
MARKUP = re.compile(r"``|:(?:func|mod|class|meth|data|attr):`")


@pytest.mark.parametrize("name", AGENTS)
def test_an_example_agents_help_is_plain_text(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        agent = importlib.import_module(f"ctxledger_cli.agents.{name}")
    except ImportError as error:  # its framework's extra is not installed
        pytest.skip(str(error))
    assert agent.__doc__ and MARKUP.search(agent.__doc__), "nothing to convert"
    with pytest.raises(SystemExit) as exited:
        agent.main(["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert not MARKUP.search(shown), shown
    assert "\n\n" in shown.split("options:")[0].split("\n\n", 1)[1]  # paragraphs apart
    commands = [line for line in shown.splitlines() if line.lstrip().startswith("python ")]
    assert commands and all(line.startswith("    python examples/") for line in commands)


def test_plain_help_turns_roles_and_literals_into_their_text() -> None:
    doc = """A loop on the ``openai`` client.

    ``failure`` cuts it with
    :func:`ctxledger.remedies.clip_rows` (in :mod:`.common`); ``plain`` does not.

        python examples/x.py --failure
    """
    assert plain_help(doc, width=200) == (
        "A loop on the openai client.\n\n"
        "--failure cuts it with ctxledger.remedies.clip_rows (in common); plain does not.\n\n"
        "    python examples/x.py --failure"
    )
