"""The one resource attribute the collector reads, ``service.name``, in both encodings:
for the decoders and for the salvage of bodies whose text is not all Unicode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from ctxledger import semconv as sc


def proto_service(attributes: Sequence[KeyValue]) -> str | None:
    """The resource's ``service.name`` from protobuf attributes."""
    for kv in attributes:
        if kv.key == sc.SERVICE_NAME and kv.value.WhichOneof("value") == "string_value":
            return str(kv.value.string_value)
    return None


def json_service(resource_spans: Any) -> str | None:
    """The resource's ``service.name`` from an OTLP JSON ``resourceSpans`` entry; a
    ``ValueError`` when its attributes are not a list."""
    attributes = resource_spans.get("resource", {}).get("attributes", [])
    if not isinstance(attributes, list):
        raise ValueError("resource attributes must be a list of key/value objects")
    for item in attributes:
        if isinstance(item, dict) and item.get("key") == sc.SERVICE_NAME:
            value = item.get("value")
            text = value.get("stringValue") if isinstance(value, dict) else None
            return text if isinstance(text, str) else None
    return None
