"""The pure parts of ctxledger's OTLP/HTTP export: reading Retry-After and partial_success
reasons, where and how to send (settings, then OTEL_* variables), halving a request."""

from __future__ import annotations

import email.utils

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ctxledger._otlp_config import DEFAULT_TIMEOUT_S, SenderConfig
from ctxledger._otlp_sender import MAX_RETRY_AFTER_S, partial_success_reason, retry_after_seconds
from ctxledger._otlp_split import encode, halve
from ctxledger._settings import Settings


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("5", now) == 5.0
    assert retry_after_seconds(" 0 ", now) == 0.0
    assert retry_after_seconds(email.utils.formatdate(now + 30, usegmt=True), now) == 30.0
    assert retry_after_seconds(email.utils.formatdate(now - 30, usegmt=True), now) == 0.0
    assert retry_after_seconds("86400", now) == MAX_RETRY_AFTER_S
    for unreadable in (None, "", "soon", "-3", "1.5"):
        assert retry_after_seconds(unreadable, now) is None


def test_partial_success_reasons_do_not_change_with_the_spans_named() -> None:
    first = "span 00f067aa0ba902b7: invalid trace id; span 1f2e3d4c5b6a7988: invalid trace id"
    second = "span 0123456789abcdef: invalid trace id; and 12 more"
    assert partial_success_reason(first) == partial_success_reason(second) == "invalid trace id"
    mixed = "span 00f067aa0ba902b7: too long; span 0123456789abcdef: bad stage; and 3 more"
    assert partial_success_reason(mixed) == "too long; bad stage"
    assert partial_success_reason("") == "partial success without a reason"
    assert partial_success_reason("quota exceeded") == "quota exceeded"


def test_where_and_how_to_send_argument_then_otel_variables_then_default() -> None:
    settings = Settings.resolve(endpoint="http://collector:4318", api_key="k1", env={})
    config = SenderConfig.resolve(settings, env={})
    assert config.url == "http://collector:4318/v1/traces"
    assert config.headers["authorization"] == "Bearer k1"
    assert config.headers["content-type"] == "application/x-protobuf"
    assert (config.timeout_s, config.compression, config.verify) == (
        DEFAULT_TIMEOUT_S,
        "none",
        True,
    )

    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel:4318/",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=a%20b,authorization=Bearer%20env",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/etc/ca.pem",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/etc/client.pem",
        "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/etc/client.key",
    }
    from_env = SenderConfig.resolve(Settings.resolve(env=env), env=env)
    assert from_env.url == "https://otel:4318/v1/traces"
    assert from_env.headers["x-tenant"] == "a b"
    assert from_env.headers["authorization"] == "Bearer env"
    assert (from_env.compression, from_env.timeout_s) == ("gzip", 2.5)
    assert from_env.verify == "/etc/ca.pem"
    assert from_env.client_cert == ("/etc/client.pem", "/etc/client.key")
    # ctxledger's own key wins over the variables'.
    keyed = SenderConfig.resolve(Settings.resolve(api_key="k2", env=env), env=env)
    assert keyed.headers["authorization"] == "Bearer k2"
    signal = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel:4318/custom"}
    assert SenderConfig.resolve(Settings.resolve(env=signal), env=signal).url.endswith("/custom")


@pytest.mark.parametrize(("name", "value"), [("TIMEOUT", "-1"), ("COMPRESSION", "zstd")])
def test_unusable_otel_variables_fall_back_to_the_default(name: str, value: str) -> None:
    env = {f"OTEL_EXPORTER_OTLP_{name}": value}
    config = SenderConfig.resolve(Settings.resolve(env=env), env=env)
    assert (config.timeout_s, config.compression) == (DEFAULT_TIMEOUT_S, "none")


def _spans_of(body: bytes) -> list[tuple[str, str, str]]:
    request = ExportTraceServiceRequest.FromString(body)
    return [
        (r.resource.attributes[0].value.string_value, s.scope.name, span.name)
        for r in request.resource_spans
        for s in r.scope_spans
        for span in s.spans
    ]


def test_halving_a_request_keeps_every_span_with_its_resource_and_scope() -> None:
    ended = InMemorySpanExporter()
    spans = []
    for service in ("svc-a", "svc-b"):
        provider = TracerProvider(resource=Resource({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(ended))
        for scope in ("one", "two"):
            for i in range(3):
                provider.get_tracer(scope).start_span(f"{service}/{scope}/{i}").end()
    spans = list(ended.get_finished_spans())
    body = encode(spans)
    halves = halve(body)
    assert halves is not None
    assert [count for _, count in halves] == [6, 6]
    assert _spans_of(halves[0][0]) + _spans_of(halves[1][0]) == _spans_of(body)
    assert len(_spans_of(body)) == 12
    single = halve(encode(spans[:1]))
    assert single is None
    assert halve(b"\xff not protobuf") is None
