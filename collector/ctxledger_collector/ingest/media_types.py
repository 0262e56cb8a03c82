"""The two encodings OTLP/HTTP bodies come in."""

from __future__ import annotations

from typing import Final

PROTOBUF: Final = "application/x-protobuf"
JSON_TYPE: Final = "application/json"


def media_type_of(content_type: str) -> str:
    """The media type of a ``Content-Type`` header, without its parameters."""
    return content_type.split(";", 1)[0].strip().lower()
