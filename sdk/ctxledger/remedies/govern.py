"""``@ctxledger.govern``: a per-tool budget policy that keeps results within budget and
declares what it removed (seed 003's "one decorator on every tool", audited).

The wrapped tool's result is recorded as ``original``; the policy's remedy turns it into
the text the model gets, recorded as ``serialized`` with the remedy's declaration (so the
auditor sees a ``declared`` loss, never a silent one); the text is returned.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxledger import semconv as sc
from ctxledger._api import measure
from ctxledger._decorator import resolve_call_id
from ctxledger._serialize import to_text
from ctxledger.remedies.budget import Budget
from ctxledger.remedies.clip import clip_text
from ctxledger.remedies.paging import paginate
from ctxledger.remedies.rows import DEFAULT_RULES, KeepRule, clip_rows, keep_structured
from ctxledger.remedies.spill import SpillStore, spill

Strategy = Literal["auto", "clip", "rows", "structured", "page", "spill"]


@dataclass(frozen=True)
class Policy:
    """How one tool's results are kept within budget.

    ``auto`` picks by data type (seed 002's order): record lists keep their must-keep
    rows (``structured``), other text keeps head and tail (``clip``) — or is spilled
    whole when a ``store`` is given, so every byte stays retrievable.
    """

    budget: Budget
    strategy: Strategy = "auto"
    keep_rules: Sequence[KeepRule] = DEFAULT_RULES
    store: SpillStore | None = None
    how_to_get_more: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class Governed:
    """The text the model gets and the measure() keyword arguments that declare it."""

    text: str
    declaration: dict[str, Any]


def _has_rows(text: str) -> bool:
    from ctxledger._items import DEFAULT_ITEM_KEYS, find_item_list

    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return find_item_list(parsed, DEFAULT_ITEM_KEYS) is not None


def _budget_chars(budget: Budget) -> int:
    if budget.chars is None:
        raise ValueError("spill needs a character budget (Budget(chars=...))")
    return budget.chars


def apply_policy(value: Any, policy: Policy) -> Governed:
    """Apply ``policy`` to one tool result."""
    text = to_text(value)
    if policy.budget.fits(text):
        return Governed(text, {"declared": False})
    strategy = policy.strategy
    if strategy == "auto":
        strategy = "structured" if _has_rows(text) else "spill" if policy.store else "clip"
    result: Any
    if strategy == "structured":
        result = keep_structured(
            text, budget=policy.budget, rules=policy.keep_rules, key=policy.key
        )
    elif strategy == "rows":
        result = clip_rows(text, budget=policy.budget, key=policy.key)
    elif strategy == "page":
        result = paginate(text, budget=policy.budget)
    elif strategy == "spill":
        result = spill(text, budget_chars=_budget_chars(policy.budget), store=policy.store)
    else:
        result = clip_text(text, budget=policy.budget, how_to_get_more=policy.how_to_get_more)
    declared = {k: v for k, v in dict(result.declaration()).items() if v is not None}
    return Governed(result.text, declared)


def govern(
    policy: Policy | None = None,
    *,
    budget_chars: int | None = None,
    budget_tokens: int | None = None,
    strategy: Strategy = "auto",
    name: str | None = None,
    call_id_arg: str = "tool_call_id",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a tool (sync or async): its result is kept within the budget by the
    policy's remedy, recorded as ``original`` and (declared) ``serialized``, and
    returned as text. Give a :class:`Policy`, or ``budget_chars``/``budget_tokens`` and
    a ``strategy``. The call id comes as for :func:`ctxledger.tool`."""
    if policy is None:
        if budget_chars is None and budget_tokens is None:
            raise ValueError("govern needs a policy or a budget (budget_chars/budget_tokens)")
        policy = Policy(Budget(chars=budget_chars, tokens=budget_tokens), strategy=strategy)
    chosen = policy

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or fn.__name__
        accepts = call_id_arg in inspect.signature(fn).parameters

        def record(call_id: str, result: Any) -> str:
            measure(sc.STAGE_ORIGINAL, result, tool_call_id=call_id, tool_name=tool_name)
            governed = apply_policy(result, chosen)
            measure(
                sc.STAGE_SERIALIZED,
                governed.text,
                tool_call_id=call_id,
                tool_name=tool_name,
                **governed.declaration,
            )
            return governed.text

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> str:
                call_id = resolve_call_id(tool_name, kwargs, call_id_arg, accepts)
                return record(call_id, await fn(*args, **kwargs))

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> str:
            call_id = resolve_call_id(tool_name, kwargs, call_id_arg, accepts)
            return record(call_id, fn(*args, **kwargs))

        return wrapper

    return decorate
