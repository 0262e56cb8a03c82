"""The decoded records: what decoding and derivation hand to the judge and to storage.

A measurement or manifest span as its rule record plus the attributes as received, the
calls LLM responses issued (with the signatures that match tool spans without ids), the
tool outputs that wait for their call, and the batch one export decodes into.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxledger.verdicts import Manifest, Measurement
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
    """A request manifest span: its rule record and the attributes as received."""

    manifest: Manifest
    attributes: dict[str, Any]
    service_name: str | None


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

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(f"span {r.span_id or '?'}: {r.reason}" for r in self.rejected[:5])
        more = len(self.rejected) - 5
        return shown + (f"; and {more} more" if more > 0 else "")
