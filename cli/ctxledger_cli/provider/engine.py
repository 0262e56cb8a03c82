"""What the three APIs share: the recorded requests, the script, the context window and
the silent front discard (the behaviour of ollama#3839: a prompt over the window loses its
oldest messages, system messages excepted, and the answer is a 200 whose usage counts only
what was kept)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxledger_cli.provider.script import Script, Step, StepLike
from ctxledger_cli.provider.tokens import context_window_for


@dataclass(frozen=True)
class RecordedRequest:
    """One request exactly as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    """Keys lower-cased."""
    body: bytes
    """The body's exact bytes."""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Discard:
    """A prompt the stand-in shortened silently (``silent_front_discard``)."""

    api: str
    dropped_messages: int
    prompt_tokens_received: int
    prompt_tokens_kept: int


@dataclass(frozen=True)
class Reply:
    """A JSON answer (``body``) or a stream of SSE frames (``events``)."""

    status: int
    body: dict[str, Any] | None = None
    events: tuple[bytes, ...] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Fitted:
    messages: list[Any]
    prompt_tokens: int
    received_tokens: int
    dropped: int


class Engine:
    def __init__(
        self,
        script: Iterable[StepLike] = (),
        *,
        context_window: int | None = None,
        silent_front_discard: bool = False,
    ) -> None:
        self.lock = threading.Lock()
        self.script = Script(script)
        self.context_window = context_window
        self.silent_front_discard = silent_front_discard
        self.received: list[RecordedRequest] = []
        self.discards: list[Discard] = []
        self._stored_responses: dict[str, list[Any]] = {}

    def record(self, request: RecordedRequest) -> None:
        with self.lock:
            self.received.append(request)

    def next_step(self) -> Step:
        return self.script.next_step()

    def window_for(self, model: str) -> int:
        return self.context_window or context_window_for(model)

    def store_response(self, response_id: str, items: Sequence[Any]) -> None:
        with self.lock:
            self._stored_responses[response_id] = list(items)

    def stored_response(self, response_id: str) -> list[Any] | None:
        with self.lock:
            found = self._stored_responses.get(response_id)
            return None if found is None else list(found)

    def fit(
        self,
        api: str,
        model: str,
        messages: Sequence[Any],
        count: Callable[[Sequence[Any]], int],
        keeps: Callable[[Any], bool],
    ) -> Fitted:
        """``messages`` and their tokens; with ``silent_front_discard``, the oldest
        messages ``keeps`` does not protect are dropped (never the last) until the prompt
        fits the window."""
        kept = list(messages)
        received = tokens = count(kept)
        window = self.window_for(model)
        if tokens <= window or not self.silent_front_discard:
            return Fitted(kept, tokens, received, 0)
        dropped = 0
        while tokens > window:
            droppable = [i for i, m in enumerate(kept[:-1]) if not keeps(m)]
            if not droppable:
                break
            del kept[droppable[0]]
            dropped += 1
            tokens = count(kept)
        with self.lock:
            self.discards.append(Discard(api, dropped, received, tokens))
        return Fitted(kept, tokens, received, dropped)
