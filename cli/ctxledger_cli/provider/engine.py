"""What the APIs share: the recorded requests, the script, the context window, how
tokens are counted (:mod:`.counting`) and the silent front discard (the behaviour of
ollama#3839: a prompt over the window loses its oldest messages, system messages
excepted, and the answer is a 200 whose usage counts only what was kept). Token
truncation is in :mod:`.truncation`, Anthropic's context editing in
:mod:`.context_editing`, LM Studio's ``stopAtLimit`` in :mod:`.lm_studio`; the
refusals (``refuse_over_window``, ollama's ``truncate: false``) in :mod:`.errors`."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxledger_cli.provider.counting import Counting
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
    """A prompt the stand-in shortened (counts in reported units, :mod:`.counting`)."""

    api: str
    dropped_messages: int
    prompt_tokens_received: int
    prompt_tokens_kept: int
    policy: str = "front_discard"
    """``front_discard``, ``token_truncate`` or ``provider_edit``."""
    declared: bool = False
    """The answer says so (Responses ``truncation: "auto"``, llama.cpp's ``truncated``,
    Anthropic's ``applied_edits``); a plain front discard or chat truncation does not."""
    dropped_indices: tuple[int, ...] = ()
    """Indices (in the request's messages or input items) wholly discarded."""
    cut_indices: tuple[int, ...] = ()
    """Indices partly discarded (``token_truncate``: the cut ran through them)."""
    keep_tokens: int = 0
    """``token_truncate``: the first tokens always kept (``n_keep``), own tokens."""
    cleared_ids: tuple[str, ...] = ()
    """``provider_edit``: the ``tool_use_id`` of each result cleared."""


@dataclass(frozen=True)
class Reply:
    """A JSON answer (``body``) or a stream of SSE frames (``events``)."""

    status: int
    body: dict[str, Any] | None = None
    events: tuple[bytes, ...] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream; charset=utf-8"
    """Of a stream (``events``): SSE, or ollama's ``application/x-ndjson``."""


@dataclass
class Fitted:
    messages: list[Any]
    prompt_tokens: int
    received_tokens: int
    dropped: int
    dropped_indices: tuple[int, ...] = ()


class Engine:
    def __init__(
        self,
        script: Iterable[StepLike] = (),
        *,
        context_window: int | None = None,
        silent_front_discard: bool = False,
        token_truncate: bool = False,
        n_keep: int = 0,
        counting: Counting | None = None,
        loop: bool = False,
        refuse_over_window: bool = False,
        stop_at_limit: bool = False,
    ) -> None:
        policies = {
            "silent_front_discard": silent_front_discard,
            "token_truncate": token_truncate,
            "refuse_over_window": refuse_over_window,
            "stop_at_limit": stop_at_limit,
        }
        chosen = [name for name, on in policies.items() if on]
        if len(chosen) > 1:
            # Each is one server's answer to an over-long prompt: a server has one.
            raise ValueError(f"{' and '.join(chosen)} exclude each other")
        self.lock = threading.Lock()
        self.script = Script(script, loop=loop)
        self.context_window = context_window
        self.silent_front_discard = silent_front_discard
        self.token_truncate = token_truncate
        # llama.cpp's server today: a prompt of the window or more is refused with its
        # exceed_context_size_error (/completion and chat completions).
        self.refuse_over_window = refuse_over_window
        # LM Studio's stopAtLimit: chat completions stop the answer where the window fills.
        self.stop_at_limit = stop_at_limit
        self.n_keep = n_keep
        self.counting = counting or Counting()
        self.received: list[RecordedRequest] = []
        self.discards: list[Discard] = []
        self._stored_responses: dict[str, list[Any]] = {}

    def record(self, request: RecordedRequest) -> None:
        with self.lock:
            self.received.append(request)

    def next_step(self) -> Step:
        """The next scripted answer; raises ``ScriptUsedUp`` when none is left."""
        return self.script.next_step()

    def window_for(self, model: str, default: int | None = None) -> int:
        """The window in reported units: ``--context-window``, else ``default`` (a
        server's own default), else the model's window."""
        return self.context_window or default or context_window_for(model)

    def note(self, discard: Discard) -> None:
        with self.lock:
            self.discards.append(discard)

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
        *,
        discard: bool | None = None,
        window: int | None = None,
        declared: bool = False,
    ) -> Fitted:
        """``messages`` and their tokens; with ``silent_front_discard`` (or ``discard``:
        the server always does it), the oldest messages ``keeps`` does not protect are
        dropped (never the last) until the prompt fits ``window`` (default: the
        model's)."""
        kept = list(messages)
        positions = list(range(len(kept)))
        received = tokens = count(kept)
        window = window or self.window_for(model)
        front_discard = self.silent_front_discard if discard is None else discard
        if tokens <= window or not front_discard:
            return Fitted(kept, tokens, received, 0)
        dropped: list[int] = []
        while tokens > window:
            droppable = [i for i, m in enumerate(kept[:-1]) if not keeps(m)]
            if not droppable:
                break
            del kept[droppable[0]]
            dropped.append(positions.pop(droppable[0]))
            tokens = count(kept)
        self.note(
            Discard(
                api,
                len(dropped),
                received,
                tokens,
                declared=declared,
                dropped_indices=tuple(dropped),
            )
        )
        return Fitted(kept, tokens, received, len(dropped), tuple(dropped))
