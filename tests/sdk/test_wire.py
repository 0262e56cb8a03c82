"""Reading spans into rule records: the contract's validation rules."""

from __future__ import annotations

import pytest

from ctxledger import semconv as sc
from ctxledger.wire import (
    InvalidSpan,
    is_manifest,
    is_measurement,
    manifest_from_attributes,
    measurement_from_attributes,
)

BASE = {sc.STAGE: sc.STAGE_ORIGINAL, sc.TOOL_CALL_ID: "call_1", sc.SIZE_CHARS: 10}


def test_builtin_stage_gets_its_order():
    m = measurement_from_attributes(BASE, trace_id="t")
    assert (m.order, m.chars, m.tool_call_id) == (10, 10, "call_1")


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({**BASE, sc.STAGE: "gateway"}, "needs ctxledger.stage.order"),
        ({**BASE, sc.STAGE: sc.STAGE_SENT}, "needs ctxledger.request.id"),
        ({k: v for k, v in BASE.items() if k != sc.TOOL_CALL_ID}, "call.id is required"),
        ({**BASE, sc.SIZE_CHARS: "10"}, "must be an int"),
        ({**BASE, sc.SIZE_CHARS: True}, "must be an int"),
        ({**BASE, sc.SIZE_CHARS: -1}, "must not be negative"),
        ({**BASE, sc.ITEMS_IDS: "a,b"}, "array of strings"),
        ({**BASE, sc.TRUNCATION_DECLARED: "yes"}, "must be a bool"),
    ],
)
def test_broken_spans_say_what_is_wrong(attrs, message):
    with pytest.raises(InvalidSpan, match=message):
        measurement_from_attributes(attrs, trace_id="t")


def test_custom_stage_with_order():
    m = measurement_from_attributes({**BASE, sc.STAGE: "gateway", sc.STAGE_ORDER: 35}, trace_id="t")
    assert (m.stage, m.order) == ("gateway", 35)


def test_kinds_of_span():
    manifest = {sc.REQUEST_ID: "r1", sc.REQUEST_TOOL_CALL_IDS: ["call_1"]}
    assert is_measurement(BASE) and not is_manifest(BASE)
    assert is_manifest(manifest) and not is_measurement(manifest)
    assert not is_manifest({sc.REQUEST_ID: "r1"})
    parsed = manifest_from_attributes({**manifest, sc.STEP: 2}, trace_id="t")
    assert (parsed.request_id, parsed.step, parsed.tool_calls) == ("r1", 2, None)
