"""Domain records -> table rows, and the limits of the columns they go into.

The one module that maps a decoded span or a report to the row it is stored as, and the
only one that knows how wide a column is: the widths are read from the table
definitions, so a migration that widens a column widens the check with it. A span whose
identifiers the database cannot hold is rejected alone, with a reason, before any
transaction starts; values that go into JSON columns are made JSON-safe instead.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, TypeVar

from sqlalchemy import Column

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, preferred_copy_key
from ctxledger_collector.otlp_decode import (
    DecodedBatch,
    DecodedManifest,
    DecodedMeasurement,
    Rejection,
)
from ctxledger_collector.records import manifest_to_record, measurement_to_record, report_detail
from ctxledger_collector.tables import (
    ALERT_EVENTS,
    MANIFESTS,
    MEASUREMENTS,
    REPORTS,
    RUNS,
    ManifestValues,
    MeasurementValues,
    ReportValues,
    RunValues,
)

# --- column limits -----------------------------------------------------------------------


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
    return next(filter(None, (limit.problem(record) for limit in limits)), None)


def _fit_measurement(item: DecodedMeasurement) -> DecodedMeasurement | Rejection:
    m = item.measurement
    service, agent = _cut_service_name(item.service_name, m.agent_name)
    if service != item.service_name:
        m = replace(m, agent_name=agent)
        item = DecodedMeasurement(m, item.attributes, service)
    problem = _problem(m, _MEASUREMENT_LIMITS)
    return item if problem is None else Rejection(m.trace_id, m.span_id or "", problem)


def _fit_manifest(item: DecodedManifest) -> DecodedManifest | Rejection:
    man = item.manifest
    service, agent = _cut_service_name(item.service_name, man.agent_name)
    if service != item.service_name:
        man = replace(man, agent_name=agent)
        item = DecodedManifest(man, item.attributes, service)
    problem = _problem(man, _MANIFEST_LIMITS)
    return item if problem is None else Rejection(man.trace_id, man.span_id or "", problem)


def fit_to_columns(batch: DecodedBatch) -> DecodedBatch:
    """The batch as the database can hold it: a span with an identifier too long for its
    column, or holding a NUL character, joins the rejections; the rest is kept."""
    fitted = DecodedBatch(rejected=list(batch.rejected), ignored=batch.ignored)
    for measurement in map(_fit_measurement, batch.measurements):
        if isinstance(measurement, Rejection):
            fitted.rejected.append(measurement)
        else:
            fitted.measurements.append(measurement)
    for manifest in map(_fit_manifest, batch.manifests):
        if isinstance(manifest, Rejection):
            fitted.rejected.append(manifest)
        else:
            fitted.manifests.append(manifest)
    return fitted


# --- JSON columns ------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN or Infinity
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def json_safe(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as JSON-storable values, at any depth: bytes become base64 text,
    NaN and infinities their names, NUL characters U+FFFD."""
    return {key: _json_value(value) for key, value in attributes.items()}


# --- rows: records and reports as the values of an INSERT -------------------------------


def measurement_row(item: DecodedMeasurement) -> MeasurementValues:
    m = item.measurement
    return MeasurementValues(
        trace_id=m.trace_id,
        tool_call_id=m.tool_call_id,
        request_key=m.request_id or "",
        stage=m.stage,
        stage_order=m.order,
        tool_name=m.tool_name,
        step=m.step,
        span_id=m.span_id,
        observed_at=m.observed_at,
        pick_key=preferred_copy_key(m),
        dropped_attributes=m.dropped_attributes,
        record=measurement_to_record(m),
        attributes=json_safe(item.attributes),
    )


def manifest_row(item: DecodedManifest) -> ManifestValues:
    man = item.manifest
    return ManifestValues(
        trace_id=man.trace_id,
        request_id=man.request_id,
        step=man.step,
        model=man.model,
        tokens=man.tokens,
        context_window=man.context_window,
        span_id=man.span_id,
        observed_at=man.observed_at,
        pick_key=preferred_copy_key(man),
        record=manifest_to_record(man),
        attributes=json_safe(item.attributes),
    )


Row = TypeVar("Row", MeasurementValues, ManifestValues)


def preferred_rows(rows: Iterable[Row], key: tuple[str, ...]) -> list[Row]:
    """One row per key: the preferred copy, as the upsert keeps it against stored rows."""
    key_of = itemgetter(*key)
    kept: dict[Any, Row] = {}
    for row in rows:
        key_value = key_of(row)
        held = kept.setdefault(key_value, row)
        if row["pick_key"] > held["pick_key"]:
            kept[key_value] = row
    return list(kept.values())


def run_rows(batch: DecodedBatch) -> list[RunValues]:
    """One row per trace: when the batch saw it first and last, and who ran it."""
    runs: dict[str, RunValues] = {}
    seen = [(i.measurement, i.service_name) for i in batch.measurements] + [
        (i.manifest, i.service_name) for i in batch.manifests
    ]
    for record, service in seen:
        at = record.observed_at
        run = runs.setdefault(
            record.trace_id,
            RunValues(
                trace_id=record.trace_id,
                service_name=service,
                agent_name=record.agent_name,
                first_seen=at,
                last_seen=at,
            ),
        )
        run["first_seen"] = min(run["first_seen"], at)
        run["last_seen"] = max(run["last_seen"], at)
        run["service_name"] = run["service_name"] or service
        run["agent_name"] = run["agent_name"] or record.agent_name
    return list(runs.values())


def report_row(report: Report, manifest_times: Mapping[str, float], now: float) -> ReportValues:
    """A judged journey; ``manifest_times`` are when each request's manifest arrived."""
    observed = [m.observed_at for m in report.stages]
    if report.request_id is not None and report.request_id in manifest_times:
        observed.append(manifest_times[report.request_id])
    return ReportValues(
        trace_id=report.trace_id,
        tool_call_id=report.tool_call_id,
        request_key=report.request_id or "",
        verdict=report.verdict,
        tool_name=report.tool_name,
        agent_name=report.agent_name,
        step=report.step,
        settled=report.settled,
        lost_items=report.lost_items,
        lost_chars=report.lost_chars,
        lost_tokens=report.lost_tokens,
        last_observed_at=max(observed, default=now),
        judged_at=now,
        detail=report_detail(report),
    )
