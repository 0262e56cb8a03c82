"""What the SDK does with each answer of a real OTLP receiver: Retry-After is honoured,
partial_success is counted and logged once per reason, 400 and 413 are counted as
rejected and never spooled, a 413 batch is halved until it fits. Span id sets compared:
sent = received ∪ rejected."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import ctxledger
from ctxledger import semconv as sc

from .otlp_receiver import OTLPReceiver, decode_export_request
from .pipeline_kit import install_client, recorded_ids, spool_files


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as running:
        yield running
        running.recover()
        ctxledger.configure(service_name="e2e-idle", export=False)  # while it listens


def _measure(count: int, prefix: str = "call") -> None:
    for i in range(count):  # no run: every span is one measurement
        ctxledger.measure(sc.STAGE_ORIGINAL, f"result {prefix} {i}", tool_call_id=f"{prefix}_{i}")


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and text in r.getMessage()
    ]


@pytest.mark.parametrize("status", [503, 429])
def test_retry_after_is_honoured(receiver: OTLPReceiver, tmp_path: Path, status: int) -> None:
    client, recorded = install_client(receiver.url, tmp_path / "spool")
    receiver.fail(status, retry_after="1", requests=1)
    _measure(3)
    assert ctxledger.flush(timeout_s=30)
    refused, *accepted = receiver.requests
    assert refused.status == status
    assert accepted and all(r.status == 200 for r in accepted)
    # The collector said "not before 1 s": the SDK came back no sooner.
    assert accepted[0].received_at - refused.received_at >= 1.0
    assert sorted(s.span_id for s in receiver.spans) == sorted(recorded_ids(recorded))
    stats = client.stats()
    assert (stats.export_failures, stats.spans_spooled, stats.dropped) == (1, 3, 0)


def test_partial_success_is_counted_and_logged_once_per_reason(
    receiver: OTLPReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client, recorded = install_client(receiver.url, tmp_path / "spool")
    caplog.set_level(logging.WARNING, logger="ctxledger")
    receiver.reject_one_span("value too long for its column")
    for batch in range(3):  # three exports, each with one span refused for the same reason
        _measure(4, prefix=f"b{batch}")
        assert ctxledger.flush(timeout_s=30)
    receiver.reject_one_span("invalid trace id", requests=1)
    _measure(2, prefix="last")
    assert ctxledger.flush(timeout_s=30)

    sent = set(recorded_ids(recorded))
    received = {s.span_id for s in receiver.spans}
    rejected = {r.span_id for r in receiver.rejected}
    assert received | rejected == sent and not received & rejected
    stats = client.stats()
    assert stats.rejected_reasons == dict(Counter(r.reason for r in receiver.rejected))
    assert stats.rejected_reasons["value too long for its column"] >= 3
    assert stats.rejected_reasons["invalid trace id"] == 1
    assert stats.spans_rejected == len(rejected)
    assert stats.spans_exported == len(received)
    assert len(_warnings(caplog, "value too long for its column")) == 1
    assert len(_warnings(caplog, "invalid trace id")) == 1
    assert spool_files(tmp_path / "spool") == []


@pytest.mark.parametrize(
    ("status", "reason"),
    [(400, "HTTP 400 Bad Request"), (413, "HTTP 413 Request Entity Too Large")],
)
def test_a_refused_batch_is_counted_as_rejected_and_not_spooled(
    receiver: OTLPReceiver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    status: int,
    reason: str,
) -> None:
    spool = tmp_path / "spool"
    client, recorded = install_client(receiver.url, spool)
    caplog.set_level(logging.WARNING, logger="ctxledger")
    receiver.fail(status, retry_after=None)
    _measure(4, prefix="first")
    assert ctxledger.flush(timeout_s=30)
    _measure(4, prefix="second")
    assert ctxledger.flush(timeout_s=30)

    stats = client.stats()
    assert stats.rejected_reasons == {reason: 8}
    assert stats.spans_spooled == stats.spans_exported == stats.export_failures == 0
    assert not spool.exists()
    assert receiver.spans == []
    assert len(_warnings(caplog, reason)) == 1
    assert {r.status for r in receiver.requests} == {status}
    tried = [[s.span_id for s in decode_export_request(r.body, {})] for r in receiver.requests]
    sent = recorded_ids(recorded)
    if status == 413:  # halved down to single spans before giving up
        assert sorted(ids[0] for ids in tried if len(ids) == 1) == sorted(sent)
    else:  # each span tried once, never again
        assert sorted(i for ids in tried for i in ids) == sorted(sent)


def test_a_batch_over_the_collectors_limit_is_halved_until_it_fits(
    receiver: OTLPReceiver, tmp_path: Path
) -> None:
    client, recorded = install_client(receiver.url, tmp_path / "spool")
    _measure(1, prefix="probe")
    assert ctxledger.flush(timeout_s=30)
    one_span = len(receiver.requests[0].body)
    receiver.limit_body(one_span * 3)  # about three spans per request
    _measure(40)
    assert ctxledger.flush(timeout_s=30)
    assert any(r.status == 413 for r in receiver.requests)
    assert sorted(s.span_id for s in receiver.spans) == sorted(recorded_ids(recorded))
    stats = client.stats()
    assert (stats.spans_rejected, stats.dropped) == (0, 0)
    assert stats.spans_exported == 41
