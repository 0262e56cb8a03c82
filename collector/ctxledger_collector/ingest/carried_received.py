"""The ``received`` stages of a derived request, those of its re-sent results carried.

A request that carries an earlier result exactly as an earlier request did (its
``llm_input`` stage carried by the manifest, :class:`DecodedManifest`) and whose server
read everything it was sent gives that result the same ``received`` stage in every
request: its sizes, ``kept``, no note. Such a stage is carried too, one template per
result and setting, so a long run's request costs what is new in it, not one record per
result it re-sends; the store writes it only where it says something (as it does the
``llm_input`` stage it goes with). Everything else is the request's own, as
:func:`~ctxledger.verdicts.received_stages.received_measurements` gives it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Final

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received import (
    KEPT,
    CallOutcome,
    ReceivedOutcome,
    judge_received,
    reads_everything,
)
from ctxledger.verdicts.received_stages import (
    outcome_measurements,
    quiet_outcome,
    result_sizes,
)
from ctxledger_collector.ingest.received_runs import (
    READ_REQUESTS,
    ReadRequests,
    read_request,
    received_from_before,
    run_key,
)

#: Templates by everything their record holds but the request's own fields. Bounded;
#: emptied when full (a template is only ever rebuilt equal).
_TEMPLATES: dict[tuple[object, ...], Measurement] = {}
_TEMPLATES_MAX: Final = 50_000


def _request_fields_match(record: ReceivedRecord, manifest: Manifest) -> bool:
    """The record's request fields are its manifest's, which a carried stage takes."""
    return (
        record.trace_id == manifest.trace_id
        and record.request_id == manifest.request_id
        and record.step == manifest.step
        and record.observed_at == manifest.observed_at
        and record.span_id == manifest.span_id
    )


def received_stages(
    record: ReceivedRecord,
    sent_stages: Callable[[], Mapping[str, Measurement]],
    manifest: Manifest | None,
    carried: tuple[Measurement, ...],
    own_stages: Mapping[str, Measurement] | None = None,
    runs: ReadRequests = READ_REQUESTS,
) -> tuple[list[Measurement], list[Measurement]]:
    """The request's own ``received`` measurements, and the templates of those that go
    with a carried ``llm_input`` stage (:func:`~ctxledger_collector.decoded.batch.
    carried_stage` gives each as this request's, equal to what building it gives).
    ``sent_stages`` gives each result's stage as sent (by call id); ``own_stages``, the
    request's own stages where ``sent_stages`` adds the carried ones to them, lets a
    request that goes on from the one before look only at what is new in it
    (:mod:`.received_runs`)."""
    carries = bool(carried) and manifest is not None and _request_fields_match(record, manifest)
    setting = _setting(record)
    key = run_key(record, manifest, setting) if carries and manifest is not None else None
    if key is not None and own_stages is not None and reads_everything(record):
        last = runs.get(key)
        found = None
        if last is not None:
            template_of = functools.partial(_template, record, setting)
            found = received_from_before(record, own_stages, carried, last, template_of)
        if found is not None:
            own, templates, read = found
            runs.put(key, read)
            runs.went_on += 1
            return own, templates
    sent = sent_stages()
    outcome = judge_received(record)
    if key is None or not quiet_outcome(outcome):
        return outcome_measurements(record, outcome, sent), []
    sizes = result_sizes(record)
    carried_calls = {t.tool_call_id for t in carried if t.stage == sc.STAGE_LLM_INPUT}
    templates = [
        _template(record, setting, result.call_id, sent, sizes)
        for result in outcome.results
        if result.call_id in carried_calls
    ]
    own = outcome_measurements(record, outcome, sent, leave_out=carried_calls, sizes=sizes)
    if own_stages is not None:
        runs.put(key, read_request(record, carried, templates, own_stages))
    return own, templates


def _setting(record: ReceivedRecord) -> tuple[object, ...]:
    """What a template holds of the record, but its request's fields and the result's own."""
    return (
        record.trace_id,
        record.tokenizer,
        record.agent_name,
        record.declared,
        record.marked,
        record.source,
    )


def _template(
    record: ReceivedRecord,
    setting: tuple[object, ...],
    call_id: str,
    sent: Mapping[str, Measurement],
    sizes: Mapping[str, tuple[int, int]],
) -> Measurement:
    before = sent.get(call_id)
    tool_name = before.tool_name if before is not None else None
    key = (setting, call_id, tool_name, sizes.get(call_id, (0, 0)))
    template = _TEMPLATES.get(key)
    if template is None:
        alone = ReceivedOutcome((CallOutcome(call_id, KEPT),))
        template = outcome_measurements(record, alone, sent, sizes=sizes)[0]
        if len(_TEMPLATES) >= _TEMPLATES_MAX:
            _TEMPLATES.clear()
        _TEMPLATES[key] = template
    return template
