"""Property tests of the two OTLP decoders (protobuf and OTLP/JSON), with Hypothesis.

Whatever the body — arbitrary bytes, a valid export with bytes flipped, cut or spliced,
arbitrary JSON put anywhere in a valid document, attribute values of any type and shape
where the contract expects others — a decoder either returns a batch (spans it cannot
use rejected with a reason code of the fixed vocabulary) or raises one of its declared
errors; nothing else comes out (a stray exception would be a 500). And the protobuf and
the JSON encodings of the same spans give the same rows and the same rejections.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.decoded.rejection_codes import REASONS
from ctxledger_collector.ingest.otlp_decode import (
    DecodeLimits,
    MalformedRequest,
    TooManySpans,
    decode_export_request,
)
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.rows import manifest_row, measurement_row
from ctxledger_collector.storage.string_lists import ListWriter
from tests.collector import otlp_payloads as op

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Small limits, so that generated spans cross them too.
LIMITS = DecodeLimits(
    max_spans=40, max_attributes=24, max_value_chars=64, max_value_items=12, max_depth=3
)
TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["", "数据", "inv-0001", "\x00", "0" * 70]
)
scalars = (
    texts
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.binary(max_size=8)
)
#: Any OTLP AnyValue: scalars, arrays and key/value lists nested a few levels.
any_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=12,
)
CONTRACT_KEYS = [
    sc.STAGE,
    sc.STAGE_ORDER,
    sc.TOOL_CALL_ID,
    sc.REQUEST_ID,
    sc.SIZE_CHARS,
    sc.SIZE_TOKENS,
    sc.SIZE_ITEMS,
    sc.ITEMS_IDS,
    sc.STEP,
    sc.REQUEST_TOOL_CALL_IDS,
    sc.TOOL_NAME,
]


@st.composite
def contract_spans(draw: st.DrawFn) -> op.Span:
    """A stage measurement, a manifest or a foreign span, some of whose attributes are
    replaced by values of any type, plus extra attributes of any shape."""
    kind = draw(st.sampled_from(["stage", "manifest", "plain"]))
    call = draw(st.sampled_from(["call_a", "call_b", "调用_c"]))
    if kind == "stage":
        stage = draw(
            st.sampled_from(
                [sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT]
            )
        )
        attrs: dict[str, Any] = op.stage_attributes(
            stage,
            call,
            chars=draw(st.integers(0, 10_000)),
            tokens=draw(st.integers(0, 3_000)),
            items=draw(st.integers(0, 20)),
            ids=draw(st.none() | st.lists(texts, max_size=5)),
            request_id=draw(st.sampled_from(["req_1", "req_2"])),
            step=draw(st.integers(1, 5)),
        )
    elif kind == "manifest":
        attrs = op.manifest_attributes("req_1", draw(st.lists(st.just(call), max_size=2)))
    else:
        attrs = dict(op.plain_span().attributes)
    for key in draw(st.lists(st.sampled_from(CONTRACT_KEYS), max_size=2)):
        attrs[key] = draw(any_values)
    attrs |= draw(st.dictionaries(st.sampled_from(["x.a", "x.b", "数.c"]), any_values, max_size=2))
    return op.Span(
        attrs,
        span_id=draw(st.binary(min_size=8, max_size=8).filter(any)),
        end_time_unix_nano=draw(st.integers(500_000, 2**63)),
        dropped_attributes_count=draw(st.integers(0, 3)),
    )


def _decode(body: bytes, media: str) -> DecodedBatch | None:
    """The batch, or None for a declared error; anything else fails the test."""
    try:
        batch = decode_export_request(body, media, limits=LIMITS)
    except (MalformedRequest, TooManySpans):
        return None
    assert {r.code for r in batch.rejected} <= set(REASONS)
    return batch


@FAST
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_a_batch_or_a_declared_error(body: bytes) -> None:
    _decode(body, op.PROTOBUF)
    _decode(body, op.JSON_TYPE)


@st.composite
def mutated(draw: st.DrawFn, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "cut", "splice", "insert"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "cut":
            del data[at : at + draw(st.integers(1, 16))]
        elif action == "splice":
            data[at:at] = data[: draw(st.integers(0, len(data)))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
    return bytes(data)


@FAST
@given(
    st.lists(contract_spans(), min_size=1, max_size=4).flatmap(
        lambda spans: mutated(op.proto_body(TRACE, spans))
    )
)
def test_mutated_protobuf_exports_give_a_batch_or_a_declared_error(body: bytes) -> None:
    _decode(body, op.PROTOBUF)


@FAST
@given(
    st.lists(contract_spans(), min_size=1, max_size=4).flatmap(
        lambda spans: mutated(op.json_body(TRACE, spans))
    )
)
def test_mutated_json_exports_give_a_batch_or_a_declared_error(body: bytes) -> None:
    _decode(body, op.JSON_TYPE)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)


def _places(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document."""
    found = [path]
    if isinstance(document, dict):
        for key, value in document.items():
            found += _places(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += _places(value, (*path, index))
    return found


@FAST
@given(st.lists(contract_spans(), min_size=1, max_size=3), st.data())
def test_any_json_anywhere_in_an_export_gives_a_batch_or_a_declared_error(
    spans: list[op.Span], data: st.DataObject
) -> None:
    document = op.json_request(TRACE, spans)
    path = data.draw(st.sampled_from(_places(document)))
    replacement = data.draw(json_values)
    if path:
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = replacement
    else:
        document = replacement
    _decode(json.dumps(document).encode(), op.JSON_TYPE)


def _rows(batch: DecodedBatch) -> tuple[list[Any], list[Any], dict[bytes, str], list[Any]]:
    fitted = fit_to_columns(batch)
    lists = ListWriter()
    # By repr: copies of one span can differ where one holds None and the other a value.
    measurements = sorted((measurement_row(m, 1, lists) for m in fitted.measurements), key=repr)
    manifests = sorted((manifest_row(m, 1, lists) for m in fitted.manifests), key=repr)
    rejected = sorted((r.trace_id, r.span_id, r.code) for r in fitted.rejected)
    return measurements, manifests, lists.texts, rejected


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(contract_spans(), min_size=1, max_size=6))
def test_json_and_protobuf_encodings_of_the_same_spans_give_the_same_rows(
    spans: list[op.Span],
) -> None:
    from_proto = _decode(op.proto_body(TRACE, spans), op.PROTOBUF)
    from_json = _decode(op.json_body(TRACE, spans), op.JSON_TYPE)
    assert from_proto is not None and from_json is not None
    assert _rows(from_proto) == _rows(from_json)
    assert from_proto.ignored == from_json.ignored


def test_protobuf_arrays_keep_empty_strings_and_other_kinds_apart() -> None:
    from ctxledger_collector.ingest.otlp_proto import proto_spans
    from ctxledger_collector.ingest.otlp_spans import RawSpan

    mixed = ["", 0, False, "数据", "", 2.5, ["", 1]]
    spans = list(
        proto_spans(
            op.proto_body(TRACE, [op.Span({"x.mixed": mixed, "x.ids": ["", "a", ""]})]), LIMITS
        )
    )
    assert len(spans) == 1 and isinstance(spans[0], RawSpan)
    assert spans[0].attributes["x.mixed"] == mixed
    assert [type(v) for v in spans[0].attributes["x.mixed"]] == [type(v) for v in mixed]
    assert spans[0].attributes["x.ids"] == ["", "a", ""]


def test_a_string_over_the_limit_inside_an_array_rejects_its_span_alone() -> None:
    too_long = "长" * (LIMITS.max_value_chars + 1)
    batch = _decode(
        op.proto_body(TRACE, [op.Span({"x.ids": ["a", too_long]}), op.Span({"x.ids": ["a", "b"]})]),
        op.PROTOBUF,
    )
    assert batch is not None
    assert [r.code for r in batch.rejected] == ["value_too_long"]
