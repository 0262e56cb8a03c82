"""What the stand-in answers: a script of steps, each the assistant's text or the tool calls
it issues. Every request (to any of the three APIs) takes the next step; once the script is
used up the answer is the text ``"ok"``.

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


class Script:
    """A thread-safe queue of steps."""

    def __init__(self, steps: Iterable[StepLike] = ()) -> None:
        self._lock = threading.Lock()
        self._steps = [as_step(step) for step in steps]

    def extend(self, steps: Iterable[StepLike]) -> None:
        converted = [as_step(step) for step in steps]
        with self._lock:
            self._steps.extend(converted)

    def next_step(self) -> Step:
        with self._lock:
            return self._steps.pop(0) if self._steps else Step(text=DEFAULT_ANSWER)

    def __len__(self) -> int:
        with self._lock:
            return len(self._steps)


_call_numbers = itertools.count(1)


def new_call_id(prefix: str) -> str:
    """A fresh id in a provider's style: ``call_…``, ``fc_…``, ``toolu_…``."""
    return f"{prefix}_standin{next(_call_numbers):06d}"
