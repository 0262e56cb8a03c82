"""One OTLP/HTTP export attempt, and what the collector's answer means for the batch.

The stock exporter retries inside ``export()`` for up to its timeout, ignores
``Retry-After`` dates and ``partial_success``, and reports every failure alike. ctxledger
needs to tell them apart: a batch the collector could not take now is kept (spooled)
and retried; a batch it refused for good is counted with the reason and not resent.
"""

from __future__ import annotations

import email.utils
import enum
import gzip
import http
import re
import time
import zlib
from dataclasses import dataclass
from typing import Any

from ctxledger._otlp_config import SenderConfig

#: Answers after which the same body may succeed later: the collector is busy or down,
#: or its address or key is wrong (fixed by configuration, not by changing the data).
RETRY_STATUSES = frozenset({401, 403, 404, 408, 429, 502, 503, 504})
PAYLOAD_TOO_LARGE = 413
#: The reason of an attempt that reached nothing (connection refused, no route, DNS).
UNREACHABLE = "the collector is unreachable"
#: A Retry-After longer than this is read as this (a misconfigured proxy must not stall
#: the pipeline for hours).
MAX_RETRY_AFTER_S = 600.0

_OS_ERROR = re.compile(r"\[Errno -?\d+\][^'\")]*")
_SPAN_ID = re.compile(r"\b(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{16})\b")
_AND_MORE = re.compile(r";?\s*and \d+ more\s*$")
_SPAN_PREFIX = re.compile(r"^span\s+\S+:\s*")


class Outcome(enum.Enum):
    ACCEPTED = "accepted"
    """Stored (``rejected_spans`` of them may have been refused by ``partial_success``)."""
    RETRY = "retry"
    """Not taken now: keep the batch and send it again later."""
    REJECTED = "rejected"
    """Refused for good: do not send it again."""
    TOO_LARGE = "too_large"
    """413: the body is over the collector's limit; smaller parts may pass."""


@dataclass(frozen=True)
class ExportAnswer:
    outcome: Outcome
    reason: str = ""
    """For RETRY and REJECTED: a short, stable reason (one per kind of failure)."""
    detail: str = ""
    """The collector's own words, for the log."""
    rejected_spans: int = 0
    retry_after_s: float | None = None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds from now: delta seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        return None
    now = time.time() if now is None else now
    return min(max(when.timestamp() - now, 0.0), MAX_RETRY_AFTER_S)


def partial_success_reason(message: str) -> str:
    """The reason of a ``partial_success`` message, with what changes from batch to batch
    (span ids, "and N more") taken out, so that one reason is counted and logged once.

    ``"span 1f2e…: invalid trace id; span 9a8b…: invalid trace id; and 3 more"`` is
    ``"invalid trace id"``.
    """
    parts: list[str] = []
    for part in _AND_MORE.sub("", message.strip()).split(";"):
        part = _SPAN_ID.sub("…", _SPAN_PREFIX.sub("", part.strip())).strip()
        if part and part not in parts:
            parts.append(part)
    return "; ".join(parts) or "partial success without a reason"


def _short(error: BaseException) -> str:
    """The operating system's words in a transport error ("[Errno 111] Connection
    refused"), not the whole chain of wrappers."""
    text = str(error)
    found = _OS_ERROR.search(text)
    return found.group(0).strip() if found else text[:200]


def _status_reason(status: int) -> str:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "unexpected status"
    return f"HTTP {status} {phrase}"


def _error_detail(response: Any) -> str:
    """The message of an OTLP error answer (a ``google.rpc.Status``) or its text."""
    content_type = response.headers.get("content-type", "")
    if "protobuf" in content_type:
        from google.rpc import status_pb2

        try:
            return str(status_pb2.Status.FromString(response.content).message)[:500]
        except Exception:  # not a Status after all: show the text
            pass
    return str(response.text)[:500].strip()


def _accepted(response: Any) -> ExportAnswer:
    """A 2xx answer: read its ``partial_success``, if any."""
    if not response.content or "protobuf" not in response.headers.get("content-type", ""):
        return ExportAnswer(Outcome.ACCEPTED)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    try:
        answer = ExportTraceServiceResponse.FromString(response.content)
    except Exception:  # a 2xx we cannot read still means stored
        return ExportAnswer(Outcome.ACCEPTED)
    rejected = int(answer.partial_success.rejected_spans)
    message = str(answer.partial_success.error_message)
    if rejected <= 0:
        return ExportAnswer(Outcome.ACCEPTED)
    return ExportAnswer(
        Outcome.ACCEPTED,
        reason=partial_success_reason(message),
        detail=message[:500],
        rejected_spans=rejected,
    )


def classify(response: Any) -> ExportAnswer:
    """What an HTTP answer to an export means for the batch."""
    status = int(response.status_code)
    if 200 <= status < 300:
        return _accepted(response)
    reason = _status_reason(status)
    detail = _error_detail(response)
    if status in RETRY_STATUSES:
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        return ExportAnswer(Outcome.RETRY, reason, detail, retry_after_s=retry_after)
    if status == PAYLOAD_TOO_LARGE:
        return ExportAnswer(Outcome.TOO_LARGE, reason, detail)
    return ExportAnswer(Outcome.REJECTED, reason, detail)


class OTLPSender:
    """Sends serialized ``ExportTraceServiceRequest`` bodies, one attempt each, over one
    keep-alive session. Never raises: a transport error is a RETRY answer."""

    def __init__(self, config: SenderConfig) -> None:
        import requests  # what the OTLP/HTTP exporter we depend on is built on

        self.config = config
        self._requests = requests
        self._session = requests.Session()

    def _encoded(self, body: bytes) -> tuple[bytes, dict[str, str]]:
        if self.config.compression == "gzip":
            return gzip.compress(body, compresslevel=6), {"content-encoding": "gzip"}
        if self.config.compression == "deflate":
            return zlib.compress(body), {"content-encoding": "deflate"}
        return body, {}

    def send(self, body: bytes) -> ExportAnswer:
        data, extra = self._encoded(body)
        headers = {**self.config.headers, **extra}
        exceptions = self._requests.exceptions
        for attempt in (1, 2):
            try:
                response = self._session.post(
                    self.config.url,
                    data=data,
                    headers=headers,
                    timeout=self.config.timeout_s,
                    verify=self.config.verify,
                    cert=self.config.client_cert,
                )
            except exceptions.Timeout:
                return ExportAnswer(Outcome.RETRY, "the collector did not answer in time")
            except exceptions.ConnectionError as error:
                if attempt == 1:  # a kept-alive connection the collector closed: once more
                    continue
                return ExportAnswer(Outcome.RETRY, UNREACHABLE, _short(error))
            except Exception as error:  # any other transport failure: keep the batch
                return ExportAnswer(Outcome.RETRY, f"export failed: {type(error).__name__}")
            return classify(response)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._session.close()
