"""The limits of the columns decoded records go into, read from the table definitions.

The one module that knows how wide a column is: a migration that widens a column widens
the check with it. A span whose identifiers the database cannot hold is rejected alone,
with a reason, before any transaction starts (values that go into JSON text columns are
made JSON-safe instead, by :mod:`.column_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Column

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.batch import (
    DecodedBatch,
    DecodedLogRecord,
    DecodedManifest,
    DecodedMeasurement,
)
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS
from ctxledger_collector.storage.tables import MANIFESTS, MEASUREMENTS, REPORTS, RUNS


def _width(column: Column[Any]) -> int:
    # A String, or sqlmodel's AutoString decorating one (which passes .length through).
    length = getattr(column.type, "length", None)
    assert isinstance(length, int), f"{column} has no length"
    return length


@dataclass(frozen=True)
class _StringLimit:
    """A record's string field, the contract attribute it comes from (named in the
    reason), and the narrowest of the columns it is stored in."""

    field: str
    attribute: str
    width: int

    @classmethod
    def of(cls, field: str, attribute: str, *columns: Column[Any]) -> _StringLimit:
        return cls(field, attribute, min(_width(column) for column in columns))

    def problem(self, record: Measurement | Manifest) -> str | None:
        value = getattr(record, self.field)
        if not isinstance(value, str):
            return None
        if len(value) > self.width:
            return f"{self.attribute} is longer than {self.width} characters"
        if "\x00" in value:  # PostgreSQL text cannot hold NUL
            return f"{self.attribute} contains a NUL character"
        return None


_MEASUREMENT_LIMITS = (
    _StringLimit.of(
        "tool_call_id",
        sc.TOOL_CALL_ID,
        MEASUREMENTS.c.tool_call_id,
        REPORTS.c.tool_call_id,
        ALERT_EVENTS.c.tool_call_id,
    ),
    _StringLimit.of(
        "request_id",
        sc.REQUEST_ID,
        MEASUREMENTS.c.request_key,
        REPORTS.c.request_key,
        ALERT_EVENTS.c.request_key,
    ),
    _StringLimit.of(
        "tool_name",
        sc.TOOL_NAME,
        MEASUREMENTS.c.tool_name,
        REPORTS.c.tool_name,
        ALERT_EVENTS.c.tool,
    ),
    _StringLimit.of("stage", sc.STAGE, MEASUREMENTS.c.stage),
    _StringLimit.of("source", sc.SOURCE, MEASUREMENTS.c.source),
    _StringLimit.of(
        "agent_name", sc.AGENT_NAME, REPORTS.c.agent_name, RUNS.c.agent_name, ALERT_EVENTS.c.agent
    ),
)
_MANIFEST_LIMITS = (
    _StringLimit.of(
        "request_id",
        sc.REQUEST_ID,
        MANIFESTS.c.request_id,
        REPORTS.c.request_key,
        ALERT_EVENTS.c.request_key,
    ),
    _StringLimit.of("model", sc.REQUEST_MODEL, MANIFESTS.c.model),
    _StringLimit.of("conversation", sc.REQUEST_CONVERSATION, MANIFESTS.c.conversation),
    _StringLimit.of("source", sc.SOURCE, MANIFESTS.c.source),
    _StringLimit.of(
        "agent_name", sc.AGENT_NAME, RUNS.c.agent_name, REPORTS.c.agent_name, ALERT_EVENTS.c.agent
    ),
)
_SERVICE_NAME_WIDTH = _width(RUNS.c.service_name)


def _cut_service_name(service: str | None, agent: str | None) -> tuple[str | None, str | None]:
    """``service.name`` only names the agent: a long one is cut to its column rather than
    refused, and so is the agent name the decoder took from it."""
    if service is None or len(service) <= _SERVICE_NAME_WIDTH:
        return service, agent
    cut = service[:_SERVICE_NAME_WIDTH]
    return cut, (cut if agent == service else agent)


def _problem(record: Measurement | Manifest, limits: tuple[_StringLimit, ...]) -> str | None:
    # Every derived stage passes here (a long run's request carries hundreds): the fields
    # read at once, and the limits asked only where a value is long or holds a NUL.
    values = record.__dict__
    for limit in limits:
        value = values[limit.field]
        if value.__class__ is str and len(value) <= limit.width and "\x00" not in value:
            continue
        problem = limit.problem(record)
        if problem is not None:
            return problem
    return None


def _fit_measurement(item: DecodedMeasurement) -> DecodedMeasurement | Rejection:
    m = item.measurement
    service, agent = _cut_service_name(item.service_name, m.agent_name)
    if service != item.service_name:
        m = replace(m, agent_name=agent)
        item = DecodedMeasurement(m, item.attributes, service)
    problem = _problem(m, _MEASUREMENT_LIMITS)
    if problem is None:
        return item
    return Rejection(m.trace_id, m.span_id or "", problem, codes.COLUMN_LIMIT, item.service_name)


def _fit_manifest(item: DecodedManifest) -> DecodedManifest | Rejection:
    man = item.manifest
    service, agent = _cut_service_name(item.service_name, man.agent_name)
    if service != item.service_name:
        man = replace(man, agent_name=agent)
        item = replace(item, manifest=man, service_name=service)
    problem = _problem(man, _MANIFEST_LIMITS)
    if problem is None:
        return item
    return Rejection(
        man.trace_id, man.span_id or "", problem, codes.COLUMN_LIMIT, item.service_name
    )


#: A carried stage's fields but its request id, which it takes from its manifest.
_CARRIED_LIMITS = tuple(limit for limit in _MEASUREMENT_LIMITS if limit.field != "request_id")
_STAGE_REQUEST_LIMIT = next(limit for limit in _MEASUREMENT_LIMITS if limit.field == "request_id")


#: Carried stages found to fit, by identity (held, so an id is never another's): a long
#: run's requests carry the very same ones. Bounded; emptied when full.
_FITTING: dict[int, Measurement] = {}
_FITTING_MAX = 20_000


#: The carried stages last found to fit, by their first stage's identity: a long run's
#: next request carries them again, then a few more. Bounded; emptied when full.
_FITTING_RUNS: dict[int, tuple[Measurement, ...]] = {}


def _carried_fit(item: DecodedManifest) -> bool:
    """A manifest's carried stages fit their columns as they are (the request id each
    takes from the manifest, and their own fields)."""
    carried = item.carried
    if not carried:
        return True
    if _STAGE_REQUEST_LIMIT.problem(item.manifest) is not None:
        return False
    run = _FITTING_RUNS.get(id(carried[0]))
    known = len(run) if run is not None and carried[: len(run)] == run else 0
    for template in carried[known:]:
        if _FITTING.get(id(template)) is template:
            continue
        if _problem(template, _CARRIED_LIMITS) is not None:
            return False
        if len(_FITTING) >= _FITTING_MAX:
            _FITTING.clear()
        _FITTING[id(template)] = template
    if len(_FITTING_RUNS) >= _FITTING_MAX:
        _FITTING_RUNS.clear()
    _FITTING_RUNS[id(carried[0])] = carried  # holds carried[0]: its id is never another's
    return True


def fit_to_columns(batch: DecodedBatch) -> DecodedBatch:
    """The batch as the database can hold it: a span with an identifier too long for its
    column, or holding a NUL character, joins the rejections; the rest is kept."""
    fitted = DecodedBatch(
        rejected=list(batch.rejected),
        ignored=batch.ignored,
        issued=list(batch.issued),
        unmatched=list(batch.unmatched),
        derived=batch.derived,
    )
    stages = list(batch.measurements)
    for item in batch.manifests:
        manifest = _fit_manifest(item)
        if isinstance(manifest, Rejection):
            fitted.rejected.append(manifest)
            stages += item.carried_stages()
        elif manifest is item and _carried_fit(item):
            fitted.manifests.append(manifest)
        else:  # each carried stage fitted, or rejected, on its own like any other
            fitted.manifests.append(replace(manifest, carried=()))
            stages += item.carried_stages()
    for measurement in map(_fit_measurement, stages):
        if isinstance(measurement, Rejection):
            fitted.rejected.append(measurement)
        else:
            fitted.measurements.append(measurement)
    for record in map(_fit_log_record, batch.log_records):
        if isinstance(record, Rejection):
            fitted.rejected.append(record)
        else:
            fitted.log_records.append(record)
    return fitted


_LOG_TEXT = ("event_name", "service_name", "scope_name", "session_id", "call_id", "body_ref")


def _fit_log_record(record: DecodedLogRecord) -> DecodedLogRecord | Rejection:
    """A log record as the database can hold it: PostgreSQL text holds no NUL, so an
    identifier with one rejects the record, and a body with one is kept as its size and
    digest only."""
    for name in _LOG_TEXT:
        value = getattr(record, name)
        if isinstance(value, str) and "\x00" in value:
            return Rejection(
                record.trace_id or "",
                record.span_id or "log:" + record.key.hex()[:16],
                f"log record: {name} contains a NUL character",
                codes.COLUMN_LIMIT,
                record.service_name,
            )
    if record.body is not None and "\x00" in record.body:
        return replace(record, body=None)
    return record
