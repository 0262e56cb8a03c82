"""The decoded records: what decoding and derivation hand to the judge and to storage.

A measurement or manifest span as its rule record plus the attributes as received, the
calls LLM responses issued (with the signatures that match tool spans without ids), the
tool outputs that wait for their call, the log records the audit reads, and the batch one
export decodes into.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.wire_received import stored_attributes
from ctxledger_collector.decoded.rejection_codes import Rejection


@dataclass(frozen=True)
class DerivedStage:
    """A derived measurement and, when the operator opted in, the text it measured."""

    measurement: Measurement
    text: str | None = None


@dataclass(frozen=True)
class IssuedCall:
    """A call an LLM response issued, with its signature for matching tool spans that
    name no call id; ``order`` is (request start time, place in the response)."""

    trace_id: str
    call_id: str
    request_id: str
    signature: int
    order: int


@dataclass(frozen=True)
class UnmatchedTool:
    """A tool span without a call id: its measurement waits to be matched to a call."""

    signature: int
    started_us: int
    stage: DerivedStage


@dataclass(frozen=True)
class DecodedMeasurement:
    """A stage measurement span: its rule record and the attributes as received."""

    measurement: Measurement
    attributes: dict[str, Any]
    service_name: str | None


@dataclass(frozen=True)
class DecodedManifest:
    """A request manifest span: its rule record and the attributes as received; for a
    derived request, the ``llm_input`` stages it carries exactly as an earlier request of
    its conversation did (``carried``: that request's stages, :func:`carried_stage` gives
    this request's), which the store writes only where they say something new; and the
    ``received`` stages that go with them, ``received_summary`` what each keeps of the
    request's counts beside its columns."""

    manifest: Manifest
    attributes: dict[str, Any]
    service_name: str | None
    carried: tuple[Measurement, ...] = ()
    received_summary: Mapping[str, Any] | None = None

    def carried_stages(self) -> list[DecodedMeasurement]:
        """The ``carried`` stages as this request's."""
        return [self.stage_of(template) for template in self.carried]

    def stage_of(self, template: Measurement) -> DecodedMeasurement:
        """One of the ``carried`` stages as this request's."""
        stage = carried_stage(template, self.manifest)
        summary = self.received_summary
        if stage.stage == sc.STAGE_RECEIVED and summary is not None:
            return DecodedMeasurement(stage, stored_attributes(stage, summary), self.service_name)
        return DecodedMeasurement(stage, {}, self.service_name)


def carried_stage(template: Measurement, manifest: Manifest) -> Measurement:
    """An earlier request's stage as the stage of ``manifest``'s request: the same record
    with the request's own id, step, time and span (what building it anew gives)."""
    copy = object.__new__(Measurement)
    fields = dict(template.__dict__)
    fields["request_id"] = manifest.request_id
    fields["step"] = manifest.step
    fields["observed_at"] = manifest.observed_at
    fields["span_id"] = manifest.span_id
    copy.__dict__.update(fields)
    return copy


@dataclass(frozen=True)
class DecodedLogRecord:
    """An OTLP log record the audit reads (contract section 8): its identity, who sent
    it, what it is about, and the body's size and digest; the body itself only when the
    operator opted in to content, else its reference (a file) at most."""

    #: A 16-byte digest of the whole record: the same record sent again (a retry, a
    #: spool replay) is stored once.
    key: bytes
    service_name: str | None
    scope_name: str | None
    event_name: str
    #: When it happened (its time, else when it was observed), whole microseconds.
    time_us: int
    trace_id: str | None
    span_id: str | None
    session_id: str | None
    call_id: str | None
    body_chars: int | None
    body_bytes: int | None
    body_sha256: str | None
    body: str | None
    body_ref: str | None
    #: The record says its runtime cut what it carries (``body_truncated``, ...).
    truncated: bool
    #: The record's numeric and boolean attributes (sizes, token counts): never content.
    numbers: dict[str, int | float | bool]


@dataclass
class DecodedBatch:
    measurements: list[DecodedMeasurement] = field(default_factory=list)
    manifests: list[DecodedManifest] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    ignored: int = 0
    #: Calls LLM responses issued, with their signatures (for tool spans without ids).
    issued: list[IssuedCall] = field(default_factory=list)
    #: Tool outputs whose span named no call id, waiting to be matched to one.
    unmatched: list[UnmatchedTool] = field(default_factory=list)
    #: Spans whose records were derived (GenAI, OpenInference).
    derived: int = 0
    #: OTLP log records the audit reads (``POST /v1/logs``).
    log_records: list[DecodedLogRecord] = field(default_factory=list)

    @property
    def stage_count(self) -> int:
        """Stage records, those carried by manifests included."""
        return len(self.measurements) + sum(len(i.carried) for i in self.manifests)

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(f"span {r.span_id or '?'}: {r.reason}" for r in self.rejected[:5])
        more = len(self.rejected) - 5
        return shown + (f"; and {more} more" if more > 0 else "")
