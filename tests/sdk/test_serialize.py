from __future__ import annotations

import dataclasses
import json

import pydantic

from ctxledger._serialize import to_text


@dataclasses.dataclass
class Order:
    id: str
    buyer: str


class Hit(pydantic.BaseModel):
    id: int
    text: str


def test_strings_and_bytes_are_taken_as_they_are():
    assert to_text("退款") == "退款"
    assert to_text("退款".encode()) == "退款"


def test_structures_become_json_without_ascii_escaping():
    assert to_text({"buyer": "张三"}) == '{"buyer": "张三"}'
    assert json.loads(to_text([Order("A1", "李四")])) == [{"id": "A1", "buyer": "李四"}]
    assert json.loads(to_text(Order("A1", "李四"))) == {"id": "A1", "buyer": "李四"}
    assert json.loads(to_text([Hit(id=1, text="片段")])) == [{"id": 1, "text": "片段"}]
    assert json.loads(to_text(Hit(id=2, text="x"))) == {"id": 2, "text": "x"}
    assert json.loads(to_text({"tags": {"a"}})) == {"tags": ["a"]}
