"""``@ctxledger.tool``: record a tool's ``original`` and ``serialized`` stages."""

from __future__ import annotations

import functools
import inspect
import logging
import uuid
from collections.abc import Callable
from typing import Any, overload

from ctxledger import semconv as sc
from ctxledger._api import measure
from ctxledger._runs import current_tool_call
from ctxledger._serialize import to_text

logger = logging.getLogger("ctxledger")
ToolFunction = Callable[..., Any]
Serializer = Callable[[Any], str]
_warned: set[str] = set()


def _safe_default(value: Any) -> str:
    try:
        return to_text(value)
    except Exception:  # the default serializer must never break the tool
        return str(value)


def resolve_call_id(name: str, kwargs: dict[str, Any], arg: str, accepts: bool) -> str:
    """The tool call id: the keyword (removed unless the tool takes it), else the
    ``ctxledger.tool_call`` context, else a generated one (logged once per tool)."""
    explicit = kwargs.get(arg) if accepts else kwargs.pop(arg, None)
    if isinstance(explicit, str) and explicit:
        return explicit
    from_context = current_tool_call()
    if from_context is not None:
        return from_context[0]
    if name not in _warned:
        _warned.add(name)
        logger.warning(
            "ctxledger: tool %r ran without a tool call id; pass %s=... or use "
            "ctxledger.tool_call(id). Its stages cannot be linked to the request.",
            name,
            arg,
        )
    return f"ctxl-{uuid.uuid4().hex[:12]}"


# The wrapper takes an extra ``tool_call_id`` keyword and may return text instead of the
# tool's own type, so it is typed loosely on purpose.
@overload
def tool(func: ToolFunction) -> ToolFunction: ...
@overload
def tool(
    *, name: str | None = None, serialize: Serializer | None = ..., call_id_arg: str = ...
) -> Callable[[ToolFunction], ToolFunction]: ...


def tool(
    func: Any = None,
    *,
    name: str | None = None,
    serialize: Serializer | None = _safe_default,
    call_id_arg: str = "tool_call_id",
) -> Any:
    """Decorate a tool (sync or async) so each call records its result as ``original``
    and, unless ``serialize=None``, returns the serialized text and records it as
    ``serialized``.

    The call id comes from the ``tool_call_id`` keyword (removed before the call when the
    function does not take it), else from ``ctxledger.tool_call(id)``.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or fn.__name__
        accepts = call_id_arg in inspect.signature(fn).parameters

        def record(call_id: str, result: Any) -> Any:
            measure(sc.STAGE_ORIGINAL, result, tool_call_id=call_id, tool_name=tool_name)
            if serialize is None:
                return result
            text = serialize(result)
            measure(sc.STAGE_SERIALIZED, text, tool_call_id=call_id, tool_name=tool_name)
            return text

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                call_id = resolve_call_id(tool_name, kwargs, call_id_arg, accepts)
                return record(call_id, await fn(*args, **kwargs))

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call_id = resolve_call_id(tool_name, kwargs, call_id_arg, accepts)
            return record(call_id, fn(*args, **kwargs))

        return wrapper

    return decorate(func) if func is not None else decorate
