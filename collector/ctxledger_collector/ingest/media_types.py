"""The two encodings OTLP/HTTP bodies come in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

Read = TypeVar("Read")

PROTOBUF: Final = "application/x-protobuf"
JSON_TYPE: Final = "application/json"


def media_type_of(content_type: str) -> str:
    """The media type of a ``Content-Type`` header, without its parameters."""
    return content_type.split(";", 1)[0].strip().lower()


def by_media_type(
    content_type: str, protobuf: Callable[[], Read], json: Callable[[], Read]
) -> Read:
    """What the reader for the body's encoding gives; ValueError for another type."""
    media_type = media_type_of(content_type)
    if media_type == PROTOBUF:
        return protobuf()
    if media_type == JSON_TYPE:
        return json()
    raise ValueError(f"unsupported content type {content_type!r}")
