"""Stage ``received``: the request as counted when it left, met with what the server
said it processed, as the attributes of one span per request (contract section 7).

Both halves are computed on the measuring worker: the request's segments when its body is
measured (:meth:`ReceivedStage.remember`), the server's report when its response has been
read (:meth:`ReceivedStage.attributes`). They meet by request id in a bounded map; a
request whose response never comes is forgotten when newer ones push it out.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from opentelemetry.util.types import AttributeValue

from ctxledger import semconv as sc
from ctxledger._jobs import ResponseJob
from ctxledger._lru import LruCache
from ctxledger._received_request import RequestSegments, digest_counter, segment_request
from ctxledger._received_usage import (
    KIND_CHAT,
    ServerReport,
    read_reported,
    server_report,
    stream_complete,
)
from ctxledger._tokens import TokenCounter
from ctxledger.models import tokenizer_is_exact

#: Requests waiting for their response (one entry is a few tuples of numbers and ids).
PENDING_REQUESTS: Final = 1024
#: A reported count above this many times the SDK's own is not a count of this request.
ABSURD_RATIO: Final = 4


def _decode(pieces: Sequence[bytes]) -> str:
    return b"".join(pieces).decode("utf-8", "replace")


def _decompressed(body: bytes, encoding: str) -> bytes | None:
    """A whole compressed body decoded as httpx decodes it; None when it cannot be."""
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(body, zlib.MAX_WBITS | 16)
        if encoding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
        if encoding == "zstd":
            import zstandard  # httpx asks for zstd only when this is installed

            return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(body))
        if encoding == "br":
            import brotli  # type: ignore[import-not-found]  # optional, like httpx's br

            return bytes(brotli.decompress(body))
    except Exception:  # a broken or unsupported body: no count from it
        return None
    return None


class ReceivedStage:
    """The pending requests and the attributes of their ``received`` spans."""

    def __init__(self, counter: TokenCounter, size: int = PENDING_REQUESTS) -> None:
        self._counter = counter
        self._pending: LruCache[str, tuple[RequestSegments, int | None]] = LruCache(size)

    def remember(
        self,
        request_id: str,
        step: int | None,
        body_text: str,
        encoding: str,
        model: str | None,
    ) -> None:
        """Segment and count a request whose response will be read (its body already
        parsed once as JSON by the ``sent`` stage)."""
        body = json.loads(body_text)
        if not isinstance(body, Mapping):
            return
        tokenizer = self._counter.resolve(encoding)
        segments = segment_request(body, digest_counter(self._counter, encoding), tokenizer, model)
        self._pending.put(request_id, (segments, step))

    def attributes(self, job: ResponseJob) -> dict[str, AttributeValue] | None:
        """The ``received`` span's attributes; None when the request was never seen (its
        job dropped from a full queue, or pushed out of the map)."""
        pending = self._pending.pop(job.request_id)
        if pending is None:
            return None
        segments, step = pending
        attrs = _request_attributes(job, segments)
        if step is not None:
            attrs[sc.STEP] = step
        unreported, report = _report(job, segments)
        if report is not None:
            _add_report(attrs, report, segments)
        if unreported is not None:
            attrs[sc.RECEIVED_UNREPORTED] = unreported
        return attrs


def _request_attributes(job: ResponseJob, segments: RequestSegments) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {
        sc.STAGE: sc.STAGE_RECEIVED,
        sc.STAGE_ORDER: sc.BUILTIN_STAGE_ORDER[sc.STAGE_RECEIVED],
        sc.REQUEST_ID: job.request_id,
        sc.RECEIVED_COUNTED_TOKENS: segments.counted_tokens,
        sc.TOKENIZER: segments.tokenizer,
        sc.TOKENIZER_EXACT: tokenizer_is_exact(segments.model, job.host, segments.tokenizer),
        sc.RECEIVED_SEGMENT_CALL_IDS: segments.call_ids,
        sc.RECEIVED_SEGMENT_TOKENS: segments.tokens,
        sc.RECEIVED_SEGMENT_CHARS: segments.chars,
        sc.RECEIVED_SEGMENT_ROLES: segments.roles,
    }
    if job.agent_name:
        attrs[sc.AGENT_NAME] = job.agent_name
    if segments.model:
        attrs[sc.REQUEST_MODEL] = segments.model
    return attrs


def _report(job: ResponseJob, segments: RequestSegments) -> tuple[str | None, ServerReport | None]:
    """Why there is no usable count (or None), and what the server reported."""
    if job.unreadable:
        return sc.UNREPORTED_NO_USAGE, None
    whole: bytes | None = b"".join(job.head)
    if job.content_encoding:
        whole = _decompressed(b"".join(job.head), job.content_encoding)
    if whole is None:
        return sc.UNREPORTED_NO_USAGE, None
    head, tail = whole.decode("utf-8", "replace"), _decode(job.tail)
    # A body is whole when the caller read it to its end; a stream also when its end
    # marker came, since clients may close it right after. The marker can sit in the
    # head when the last event is longer than the tail, so both ends are searched.
    whole_body = not job.cut or (job.streamed and stream_complete(job.kind, head + tail))
    if not whole_body:
        return sc.UNREPORTED_STREAM_CUT, None
    report = server_report(job.kind, read_reported((head, tail)), job.host)
    if job.proxy_evicted_tokens is not None:
        # The proxy cut the middle and left a marker the model reads: a declared discard.
        report = replace(report, policy=sc.POLICY_MIDDLE_DISCARD, declared=True, marked=True)
    if report.invalid:
        return sc.UNREPORTED_INVALID_COUNT, report
    if report.input_tokens is None:
        if job.streamed and not stream_complete(job.kind, head + tail):
            return sc.UNREPORTED_STREAM_CUT, report  # the server ended it before its end
        without_usage = job.streamed and job.kind == KIND_CHAT
        return (
            sc.UNREPORTED_STREAM_WITHOUT_USAGE if without_usage else sc.UNREPORTED_NO_USAGE
        ), report
    if report.input_tokens > ABSURD_RATIO * max(segments.counted_tokens, 1):
        return sc.UNREPORTED_INVALID_COUNT, report
    return None, report


def _cleared(report: ServerReport, segments: RequestSegments) -> tuple[str, ...]:
    if report.cleared_ids is not None:
        return report.cleared_ids
    # Anthropic clears the oldest tool results first, never those of excluded tools.
    oldest = [
        call_id
        for call_id, role in zip(segments.call_ids, segments.roles, strict=True)
        if role == sc.ROLE_TOOL
        and call_id
        and segments.tool_names.get(call_id) not in segments.excluded_tools
    ]
    return tuple(oldest[: report.cleared_tool_uses])


def _add_report(
    attrs: dict[str, AttributeValue], report: ServerReport, segments: RequestSegments
) -> None:
    if report.input_tokens is not None:
        attrs[sc.RECEIVED_INPUT_TOKENS] = report.input_tokens
    if report.policy is not None:
        attrs[sc.RECEIVED_POLICY] = report.policy
    if report.declared is not None:
        attrs[sc.RECEIVED_DECLARED] = report.declared
    if report.marked is not None:
        attrs[sc.RECEIVED_MARKED] = report.marked
    if report.policy == sc.POLICY_PROVIDER_EDIT:
        attrs[sc.RECEIVED_CLEARED_CALL_IDS] = _cleared(report, segments)
    if report.policy == sc.POLICY_TOKEN_TRUNCATE:
        keep = segments.keep_tokens
        attrs[sc.RECEIVED_KEEP_TOKENS] = (
            segments.counted_tokens if keep is not None and keep < 0 else max(keep or 0, 0)
        )
