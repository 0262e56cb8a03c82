"""What the stand-in answers: a script of steps, each the assistant's text or the tool calls
it issues. Every request (to any of the three APIs) takes the next step. Once the script is
used up a request raises :class:`ScriptUsedUp` (the server answers it with an error in the
provider's own shape) unless the script loops; :meth:`Script.rewind` starts it again. A
stand-in given no steps at all answers every request with the text ``"ok"``.

A script file is JSON (or YAML when PyYAML is installed) holding a list of steps, or an
object whose ``steps`` key holds it::

    [{"tool_calls": [{"name": "query_orders", "arguments": {"customer": "C-1"}}]},
     {"text": "Customer C-1 has 3 refunded orders."}]

A bare string is a text step too.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_ANSWER = "ok"


@dataclass(frozen=True)
class ToolCall:
    """A tool call a scripted answer issues. Without ``id`` the stand-in makes one in the
    API's own style (``call_…`` for OpenAI, ``toolu_…`` for Anthropic)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Step:
    """One scripted answer: text, or tool calls (with optional text before them)."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


#: What a script may hold: a Step, the assistant's text, or the tool calls it issues.
StepLike = Step | str | ToolCall | Sequence[ToolCall]


def as_step(step: StepLike) -> Step:
    if isinstance(step, Step):
        return step
    if isinstance(step, str):
        return Step(text=step)
    if isinstance(step, ToolCall):
        return Step(tool_calls=(step,))
    calls = tuple(step)
    if not all(isinstance(call, ToolCall) for call in calls):
        raise TypeError(f"a step is a Step, a text or ToolCalls, not {step!r}")
    return Step(tool_calls=calls)


def _step_from_data(data: Any) -> Step:
    if isinstance(data, str):
        return Step(text=data)
    if not isinstance(data, Mapping):
        raise ValueError(f"a script step is a text or an object, not {data!r}")
    calls = tuple(
        ToolCall(
            name=str(call["name"]),
            arguments=dict(call.get("arguments") or {}),
            id=str(call["id"]) if call.get("id") else None,
        )
        for call in data.get("tool_calls") or ()
    )
    text = data.get("text")
    if text is None and not calls:
        raise ValueError(f"a script step needs 'text' or 'tool_calls': {data!r}")
    return Step(text=None if text is None else str(text), tool_calls=calls)


def steps_from_data(data: Any) -> list[Step]:
    """Steps from parsed JSON/YAML: a list of steps or ``{"steps": [...]}``."""
    if isinstance(data, Mapping):
        data = data.get("steps")
    if not isinstance(data, list):
        raise ValueError("a script is a list of steps (or an object with a 'steps' list)")
    return [_step_from_data(item) for item in data]


def load_script(path: str | Path) -> list[Step]:
    """Read a script file (``.json``, or ``.yaml``/``.yml`` with PyYAML)."""
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    if source.suffix.lower() in {".yaml", ".yml"}:
        import yaml  # type: ignore[import-untyped]  # the server extra brings PyYAML

        return steps_from_data(yaml.safe_load(text))
    return steps_from_data(json.loads(text))


class ScriptUsedUp(Exception):
    """Every step of the script has been answered: rerunning an agent against the same
    stand-in must fail loudly, not get a tool-less ``"ok"`` that looks like a clean run."""

    def __init__(self, turns: int) -> None:
        super().__init__(f"the script is used up after {turns} turn{'s' if turns != 1 else ''}")
        self.turns = turns


class Script:
    """A thread-safe list of steps and the position of the next one. With ``loop`` the
    script starts again from its first step once used up."""

    def __init__(self, steps: Iterable[StepLike] = (), *, loop: bool = False) -> None:
        self._lock = threading.Lock()
        self._steps = [as_step(step) for step in steps]
        self._next = 0
        self.loop = loop

    def extend(self, steps: Iterable[StepLike]) -> None:
        converted = [as_step(step) for step in steps]
        with self._lock:
            self._steps.extend(converted)

    def next_step(self) -> Step:
        """The next step; raises :class:`ScriptUsedUp` when none is left."""
        with self._lock:
            if not self._steps:
                return Step(text=DEFAULT_ANSWER)
            if self._next == len(self._steps):
                if not self.loop:
                    raise ScriptUsedUp(len(self._steps))
                self._next = 0
            step = self._steps[self._next]
            self._next += 1
            return step

    def rewind(self) -> int:
        """Start again from the first step; returns how many steps the script has."""
        with self._lock:
            self._next = 0
            return len(self._steps)

    @property
    def turns(self) -> int:
        """How many steps the script has in all."""
        with self._lock:
            return len(self._steps)

    def __len__(self) -> int:
        """How many steps are left before the script is used up."""
        with self._lock:
            return len(self._steps) - self._next


_call_numbers = itertools.count(1)


def new_call_id(prefix: str) -> str:
    """A fresh id in a provider's style: ``call_…``, ``fc_…``, ``toolu_…``."""
    return f"{prefix}_standin{next(_call_numbers):06d}"
