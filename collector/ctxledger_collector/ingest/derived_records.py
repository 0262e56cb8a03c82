"""The records derivation gave, added to a decoded batch: each stage a measurement (its
text only where the operator opted in), the request's manifest, and one ``received``
measurement per tool result of a request whose server reported what it read."""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts import Measurement
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received_stages import received_measurements
from ctxledger.wire_received import received_attributes, stored_attributes
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.derive import Derived
from ctxledger_collector.derive.stage_records import MAX_CONTENT_CHARS
from ctxledger_collector.ingest.carried_received import received_stages


def add_derived(derived: Derived, batch: DecodedBatch, service: str | None) -> None:
    for stage in derived.stages:
        text = stage.text
        content = {sc.CONTENT_TEXT: text[:MAX_CONTENT_CHARS]} if text is not None else {}
        if stage.measurement.note is not None:
            content[sc.STAGE_NOTE] = stage.measurement.note
        batch.measurements.append(DecodedMeasurement(stage.measurement, content, service))
    carried: tuple[Measurement, ...] = tuple(derived.carried)
    summary: dict[str, Any] | None = None
    if derived.received is not None:
        # What the received stages lend from these (the tool name) a carried one has too.
        own_stages = {s.measurement.tool_call_id: s.measurement for s in derived.stages}

        def sent_stages() -> dict[str, Measurement]:
            return derived.sent or {**{m.tool_call_id: m for m in derived.carried}, **own_stages}

        summary = received_attributes(derived.received)
        own, templates = received_stages(
            derived.received,
            sent_stages,
            derived.manifest,
            carried,
            own_stages if not derived.sent else None,
        )
        carried = with_received(carried, templates)
        for m in own:
            batch.measurements.append(DecodedMeasurement(m, stored_attributes(m, summary), service))
    if derived.manifest is not None:
        batch.manifests.append(DecodedManifest(derived.manifest, {}, service, carried, summary))
    batch.issued.extend(derived.issued)
    batch.unmatched.extend(derived.unmatched)


_CALL = attrgetter("tool_call_id")


def with_received(
    carried: tuple[Measurement, ...], received: list[Measurement]
) -> tuple[Measurement, ...]:
    """The carried stages with their ``received`` ones: each right after its result's
    ``llm_input`` stage where they go one for one, so that the next request's carried
    stages begin with these (:mod:`~ctxledger_collector.judge.quiet_runs`); else after."""
    if not received:
        return carried
    if list(map(_CALL, carried)) == list(map(_CALL, received)):
        return tuple(chain.from_iterable(zip(carried, received, strict=True)))
    return (*carried, *received)


def add_received(
    batch: DecodedBatch,
    record: ReceivedRecord,
    summary: dict[str, Any],
    service: str | None,
    sent: dict[str, Measurement] | None = None,
) -> None:
    """One ``received`` measurement per tool result of the record's request, each keeping
    the outcome and the span's counts (``summary``) beside its columns."""
    for m in received_measurements(record, sent):
        batch.measurements.append(DecodedMeasurement(m, stored_attributes(m, summary), service))
