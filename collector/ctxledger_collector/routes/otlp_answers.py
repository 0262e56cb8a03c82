"""OTLP/HTTP answers of ``POST /v1/traces`` and ``/v1/logs``: a refused request
(:class:`RequestRejected`, answered as a ``google.rpc.Status`` in the request's encoding),
a stored one (with its partial success), and the gzip bodies both the route and the spool
replay decompress."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi import Response
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.ingest.gzip_bodies import GzipInvalid, GzipTooLarge, inflate
from ctxledger_collector.ingest.otlp_decode import JSON_TYPE, PROTOBUF

GRPC_INVALID_ARGUMENT = 3
GRPC_UNAUTHENTICATED = 16
GRPC_UNAVAILABLE = 14
GRPC_RESOURCE_EXHAUSTED = 8


class RequestRejected(Exception):
    def __init__(
        self, status: int, message: str, grpc_code: int, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.grpc_code = grpc_code
        self.headers = headers or {}


def error_answer(media: str, status: int, message: str, grpc_code: int, **headers: str) -> Response:
    """An OTLP error answer: a google.rpc.Status in the request's encoding."""
    if media == PROTOBUF:
        body = status_pb2.Status(code=grpc_code, message=message).SerializeToString()
        return Response(body, status, media_type=PROTOBUF, headers=headers)
    payload = json.dumps({"code": grpc_code, "message": message})
    return Response(payload, status, media_type=JSON_TYPE, headers=headers)


def gunzip(body: bytes, limit: int, on_growth: Callable[[int], None] | None = None) -> bytes:
    """Decompress every gzip member (RFC 1952 allows several), within ``limit``: 413
    past it, 400 for a corrupt or truncated body. The refusal is raised outside the
    handler so that it holds no reference to the inflater's error or its frames."""
    try:
        return inflate(body, limit, on_growth)
    except GzipTooLarge as too_large:
        refusal = RequestRejected(413, str(too_large), GRPC_RESOURCE_EXHAUSTED)
    except GzipInvalid as invalid:
        refusal = RequestRejected(400, str(invalid), GRPC_INVALID_ARGUMENT)
    try:
        raise refusal
    finally:
        del refusal  # else this frame and the error's traceback form a cycle


def success_answer(media: str, batch: DecodedBatch, signal: str = "traces") -> Response:
    """The export's answer: an ``Export{Trace,Logs}ServiceResponse`` in the request's
    encoding, with what was rejected in its ``partial_success``."""
    rejected, message = len(batch.rejected), batch.error_message
    response: ExportTraceServiceResponse | ExportLogsServiceResponse
    if signal == "logs":
        response = ExportLogsServiceResponse()
        if rejected:
            response.partial_success.CopyFrom(
                ExportLogsPartialSuccess(rejected_log_records=rejected, error_message=message)
            )
    else:
        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
            )
    if media == PROTOBUF:
        return Response(response.SerializeToString(), 200, media_type=PROTOBUF)
    payload: dict[str, object] = {}
    if rejected:
        count = "rejectedLogRecords" if signal == "logs" else "rejectedSpans"
        payload["partialSuccess"] = {count: str(rejected), "errorMessage": message}
    return Response(json.dumps(payload), 200, media_type=JSON_TYPE)
