"""OTLP/HTTP answers of ``POST /v1/traces``: a refused request (:class:`RequestRejected`,
answered as a ``google.rpc.Status`` in the request's encoding), a stored one (with its
partial success), and the gzip bodies both the route and the spool replay decompress."""

from __future__ import annotations

import json
import zlib

from fastapi import Response
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from ctxledger_collector.otlp_decode import JSON_TYPE, PROTOBUF, DecodedBatch

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


def gunzip(body: bytes, limit: int) -> bytes:
    """Decompress every gzip member (RFC 1952 allows several), within ``limit``."""
    parts: list[bytes] = []
    size = 0
    rest = body
    while rest:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = decompressor.decompress(rest, limit - size + 1)
        except zlib.error as error:
            raise RequestRejected(
                400, f"body is not valid gzip: {error}", GRPC_INVALID_ARGUMENT
            ) from error
        size += len(data)
        if size > limit or decompressor.unconsumed_tail:
            raise RequestRejected(
                413,
                f"decompressed body is over the limit of {limit} bytes",
                GRPC_RESOURCE_EXHAUSTED,
            )
        if not decompressor.eof:
            raise RequestRejected(400, "gzip body is truncated", GRPC_INVALID_ARGUMENT)
        parts.append(data)
        rest = decompressor.unused_data
    return b"".join(parts)


def success_answer(media: str, batch: DecodedBatch) -> Response:
    response = ExportTraceServiceResponse()
    if batch.rejected:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(
                rejected_spans=len(batch.rejected), error_message=batch.error_message
            )
        )
    if media == PROTOBUF:
        return Response(response.SerializeToString(), 200, media_type=PROTOBUF)
    payload: dict[str, object] = {}
    if batch.rejected:
        payload["partialSuccess"] = {
            "rejectedSpans": str(len(batch.rejected)),
            "errorMessage": batch.error_message,
        }
    return Response(json.dumps(payload), 200, media_type=JSON_TYPE)
