"""What is wrong with an alert rules file, said as ``FILE:LINE: PATH: MESSAGE``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

#: Where a value sits in the rules file: keys and list positions, as pydantic gives them.
Loc = tuple[str | int, ...]
#: One problem before it is written out: its line (if known), where, and what.
Problem = tuple[int | None, Loc, str]


class AlertsConfigError(ValueError):
    """The alert rules file is wrong; ``problems`` says where and how, one line each.

    Each problem reads ``FILE:LINE: PATH: MESSAGE``, e.g.
    ``alerts.yaml:4: rules[1].verdicts[0]: 'slient' is not a verdict; known: ...``.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Located(ValueError):
    """A validation error about a part of the value validated (``loc`` is relative to it)."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """A hint naming the choice closest to ``word``, or an empty string."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def format_problem(filename: str, line: int | None, loc: Loc, message: str) -> str:
    """One problem as ``FILE:LINE: PATH: MESSAGE`` (the parts that are known)."""
    where = f"{filename}:{line}" if line is not None else filename
    path = loc_path(loc)
    return f"{where}: {path}: {message}" if path else f"{where}: {message}"


def loc_path(loc: Loc) -> str:
    """A location as the file's reader writes it: ``rules[0].verdicts[1]``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path
