"""The public measurement API. Every function here returns at once and never raises."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context

from ctxledger import semconv as sc
from ctxledger._client import Client, get_client, install
from ctxledger._encodings import encoding_name_for
from ctxledger._items import DEFAULT_ID_FIELDS, DEFAULT_ITEM_KEYS
from ctxledger._jobs import RequestJob, StageJob
from ctxledger._markers import DEFAULT_MARKERS, Marker
from ctxledger._messages import ParsedMessages, parse_messages
from ctxledger._pipeline_stats import PipelineStats
from ctxledger._runs import RunState, current_run, parent_span
from ctxledger._safety import never_raises
from ctxledger._serialize import to_text
from ctxledger._settings import Settings
from ctxledger.verdicts import STAGE_EMERGENCY_TRIM_ORDER, Tolerances


def configure(
    service_name: str | None = None,
    endpoint: str | None = None,
    api_key: str | None = None,
    *,
    tracer_provider: Any = None,
    export: bool | None = None,
    ledger: str | None = None,
    capture_content: bool | None = None,
    item_keys: Sequence[str] = DEFAULT_ITEM_KEYS,
    id_fields: Sequence[str] = DEFAULT_ID_FIELDS,
    must_keep: Callable[[Any], bool] | None = None,
    markers: Sequence[Marker] = DEFAULT_MARKERS,
    extra_markers: Sequence[Marker] = (),
    context_windows: Mapping[str, int] | None = None,
    tokenizer: str | None = None,
    max_queue: int | None = None,
    spool_dir: str | os.PathLike[str] | None = None,
    spool_max_bytes: int | None = None,
    max_exact_token_chars: int | None = None,
    tolerances: Tolerances | None = None,
) -> Client:
    """Set ctxledger up once, at start-up. Every argument falls back to its environment
    variable (``CTXLEDGER_*``, ``OTEL_*``), then to its default.

    When the application already runs an OpenTelemetry SDK (Phoenix, Langfuse, Logfire,
    its own collector), measurements go through its provider and join its traces;
    otherwise ctxledger exports OTLP/HTTP to ``endpoint`` (default
    ``http://127.0.0.1:4318``) with a buffered pipeline that counts what it drops; what
    the collector cannot take waits in an on-disk spool (``spool_dir``, default under the
    user's cache directory, ``"off"`` for memory only; at most ``spool_max_bytes``) and is
    sent when the collector is back, by this process or the next one.
    ``tolerances`` set how much a size may fall before the local ledger calls it loss.
    """
    settings = Settings.resolve(
        service_name=service_name,
        endpoint=endpoint,
        api_key=api_key,
        export=export,
        ledger=ledger,
        capture_content=capture_content,
        max_queue=max_queue,
        spool_dir=spool_dir,
        spool_max_bytes=spool_max_bytes,
        max_exact_token_chars=max_exact_token_chars,
        default_encoding=tokenizer,
    )
    client = Client(
        settings,
        tracer_provider=tracer_provider,
        item_keys=tuple(item_keys),
        id_fields=tuple(id_fields),
        must_keep=must_keep,
        markers=(*markers, *extra_markers),
        context_windows=dict(context_windows or {}),
        tolerances=tolerances,
    )
    return install(client)


def _encoding(client: Client, run: RunState, model: str | None) -> str:
    return encoding_name_for(model or run.model, client.settings.default_encoding)


def _stage_order(stage: str, order: int | None) -> int:
    if order is not None:
        return order
    if stage not in sc.BUILTIN_STAGE_ORDER:
        raise ValueError(f"custom stage {stage!r} needs an order (built-in: 10, 20, 30, 40)")
    return sc.BUILTIN_STAGE_ORDER[stage]


@never_raises(None)
def measure(
    stage: str,
    value: Any,
    *,
    tool_call_id: str,
    tool_name: str | None = None,
    order: int | None = None,
    request_id: str | None = None,
    step: int | None = None,
    model: str | None = None,
    declared: bool = False,
    strategy: str | None = None,
    marker: bool | None = None,
    ref: str | None = None,
) -> None:
    """Measure one tool result at one stage.

    ``value`` may be any Python value: text is measured as it is, anything else as the
    JSON it serialises to. ``stage`` is ``original``, ``serialized``, ``assembled``,
    ``sent`` or a custom name with an ``order``. Request stages (order >= 30) join the
    current pending request unless ``request_id`` is given. Set ``declared`` (and
    ``strategy``, ``ref``) when this stage knowingly reduced the result; ``marker``
    overrides the detection of a visible truncation marker in the text.
    """
    client = get_client()
    run = current_run()
    stage_order = _stage_order(stage, order)
    in_request = request_id is not None or stage_order >= sc.BUILTIN_STAGE_ORDER[sc.STAGE_ASSEMBLED]
    if in_request and request_id is None:
        pending = run.open_request()
        request_id, step = pending.request_id, step if step is not None else pending.step
    client.recorder.submit(
        StageJob(
            stage=stage,
            order=stage_order,
            text=to_text(value),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            request_id=request_id,
            step=step if step is not None else run.step,
            agent_name=run.agent_name,
            encoding=_encoding(client, run, model),
            start_ns=time.time_ns(),
            declared=declared,
            strategy=strategy,
            marker=marker,
            ref=ref,
            parent=parent_span(run),
            context=otel_context.get_current(),
        )
    )


def _submit_parts(
    client: Client,
    run: RunState,
    parsed: ParsedMessages,
    stage: str,
    request_id: str,
    step: int,
    encoding: str,
) -> None:
    order = (
        _stage_order(stage, None) if stage in sc.BUILTIN_STAGE_ORDER else STAGE_EMERGENCY_TRIM_ORDER
    )
    parent, ctx = parent_span(run), otel_context.get_current()
    for part in parsed.results:
        client.recorder.submit(
            StageJob(
                stage=stage,
                order=order,
                text=part.text,
                tool_call_id=part.tool_call_id,
                tool_name=part.tool_name,
                request_id=request_id,
                step=step,
                agent_name=run.agent_name,
                encoding=encoding,
                start_ns=time.time_ns(),
                parent=parent,
                context=ctx,
            )
        )


@never_raises(None)
def measure_messages(
    messages: Iterable[Any],
    *,
    model: str | None = None,
    request_id: str | None = None,
    step: int | None = None,
) -> str | None:
    """Measure every tool result in an OpenAI or Anthropic ``messages`` list as the
    ``assembled`` stage of the next LLM request, and return that request's id. The
    request body that leaves next (see :func:`httpx_event_hooks`) carries the same id.
    """
    client = get_client()
    run = current_run()
    if model:
        run.remember_model(model)
    request = run.open_request(request_id, step)
    parsed = parse_messages(messages)
    encoding = _encoding(client, run, model)
    _submit_parts(
        client, run, parsed, sc.STAGE_ASSEMBLED, request.request_id, request.step, encoding
    )
    return request.request_id


@never_raises(None)
def measure_request(
    body: str | bytes | Mapping[str, Any],
    *,
    model: str | None = None,
) -> str | None:
    """Measure a request body as it is sent to the model: every tool result in it as
    the ``sent`` stage, plus the request manifest (results present, calls issued,
    tokens, context window). Returns the request id. The httpx hooks call this with
    the exact bytes that leave the process."""
    return submit_request(body, model=model, read_response=False)


def submit_request(
    body: str | bytes | Mapping[str, Any], *, model: str | None, read_response: bool
) -> str:
    """:func:`measure_request`'s work; ``read_response`` when the httpx hooks will read
    the response (stage ``received``). Raises: callers guard it."""
    client = get_client()
    run = current_run()
    request = run.claim_request()
    # Only a snapshot on the agent's thread; decoding, parsing and measuring happen on
    # the worker (a bytearray is copied: it could change after we return).
    snapshot = (
        bytes(body)
        if isinstance(body, (bytes, bytearray))
        else body
        if isinstance(body, str)
        else to_text(body)
    )
    client.recorder.submit(
        RequestJob(
            body=snapshot,
            request_id=request.request_id,
            step=request.step,
            agent_name=run.agent_name,
            model=model,
            run_model=run.model,
            default_encoding=client.settings.default_encoding,
            context_windows=client.context_windows,
            parent=parent_span(run),
            context=otel_context.get_current(),
            read_response=read_response,
        )
    )
    return request.request_id


def flush(timeout_s: float = 30.0) -> bool:
    """Emit and export everything measured so far (call before a short script exits)."""
    return get_client().flush(timeout_s)


def stats() -> PipelineStats:
    """The SDK's own pipeline counters: measured, exported, spooled, rejected (by reason)
    and everything dropped."""
    return get_client().stats()


def settings() -> Settings:
    return get_client().settings
