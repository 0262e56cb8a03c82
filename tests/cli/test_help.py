"""`ctxledger --help` for a first-time user: every subcommand says what it does, every option
has a help text, and every option with a default shows it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from ctxledger_cli.parser import build_parser
from tests.e2e.helpers import subprocess_env


def _commands(
    parser: argparse.ArgumentParser, name: str = "ctxledger"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                yield from _commands(subparser, f"{name} {command}")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_command_has_a_description_and_every_option_help_with_its_default() -> None:
    problems: list[str] = []
    commands = dict(_commands(build_parser()))
    assert {"ctxledger up", "ctxledger dashboard", "ctxledger key new"} <= set(commands)
    for name, parser in commands.items():
        if not parser.description:
            problems.append(f"{name}: no description")
        shown = _flat(parser.format_help())
        for action in parser._actions:
            label = "/".join(action.option_strings) or action.dest
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    if not choice.help:
                        problems.append(f"{name} {choice.dest}: no help in the command list")
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                problems.append(f"{name} {label}: no help")
            elif (
                action.default not in (None, False, argparse.SUPPRESS)
                and f"(default: {action.default})" not in shown
            ):
                problems.append(f"{name} {label}: its default {action.default!r} not shown")
    assert not problems, "\n".join(problems)


def test_up_help_shows_the_ports_and_their_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", "up", "--help"],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = _flat(done.stdout)
    for expected in (
        "--host HOST the address both listen on (default: 127.0.0.1)",
        "--port PORT the collector's port (default: 4318)",
        "--dashboard-port DASHBOARD_PORT the dashboard's port (default: 8501)",
        "a taken one is refused before anything starts",
    ):
        assert expected in shown, done.stdout
