"""@govern: a budget policy per tool, every reduction declared to the auditor."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import ctxledger
from ctxledger.remedies.budget import Budget
from ctxledger.remedies.govern import Policy, apply_policy, govern
from ctxledger.remedies.spill import DirectorySpillStore, fetch


def _orders(n: int = 200) -> list[dict[str, object]]:
    rng = random.Random(20261111)
    rows = []
    for i in range(n):
        status = "refunding" if i % 37 == 5 else "paid"
        rows.append(
            {
                "id": f"ORD-{i:04d}",
                "status": status,
                "amount": round(rng.uniform(10, 900), 2),
                "buyer": f"买家{i}",
                "error_code": "E42" if i % 41 == 7 else None,
                "note": "常规订单，无异常" * rng.randint(1, 3),
            }
        )
    return rows


@pytest.fixture
def ledger(tmp_path: Path):
    path = tmp_path / "ledger.txt"
    client = ctxledger.configure(export=False, ledger=str(path))
    yield path
    client.shutdown()


def _lines(path: Path) -> list[str]:
    ctxledger.flush()
    return path.read_text(encoding="utf-8").splitlines()


def test_record_lists_keep_must_keep_rows_within_budget_and_declare_it(ledger: Path) -> None:
    @govern(budget_chars=2000)
    def query_orders() -> dict[str, object]:
        return {"tool": "order.query", "items": _orders()}

    text = query_orders(tool_call_id="call_orders")
    assert len(text) <= 2000
    kept = json.loads(text)  # always valid JSON
    assert kept["truncated"] is True and kept["total"] == 200
    ids = {row["id"] for row in kept["items"]}
    assert "ORD-0005" in ids  # refunding: a must-keep row
    losses = [line for line in _lines(ledger) if " LOSS " in line]
    assert losses and all("LOSS declared" in line for line in losses), losses


def test_plain_text_is_clipped_head_and_tail_with_a_marker(ledger: Path) -> None:
    log = "\n".join(f"INFO step {i}" for i in range(2000)) + "\nERROR disk full at the end"

    @govern(budget_chars=1500)
    def read_log() -> str:
        return log

    text = read_log(tool_call_id="call_log")
    assert len(text) <= 1500
    assert text.startswith("INFO step 0") and text.endswith("ERROR disk full at the end")
    assert "[ctxledger: clipped" in text
    assert any("LOSS declared" in line for line in _lines(ledger))


def test_spill_keeps_everything_retrievable(ledger: Path, tmp_path: Path) -> None:
    store = DirectorySpillStore(tmp_path / "spill")
    big = "第一段内容。" * 3000
    policy = Policy(Budget(chars=800), strategy="spill", store=store)

    @govern(policy)
    async def fetch_doc() -> str:
        return big

    import asyncio

    text = asyncio.run(fetch_doc(tool_call_id="call_doc"))
    assert len(text) <= 800 and "[ctxledger: spilled" in text
    ref = text.split('ref="', 1)[1].split('"', 1)[0]
    assert fetch(ref, 0, len(big), store=store).startswith(big)
    assert any("LOSS declared" in line for line in _lines(ledger))


def test_within_budget_is_untouched_and_undeclared(ledger: Path) -> None:
    governed = apply_policy({"id": 1, "ok": True}, Policy(Budget(chars=1000)))
    assert json.loads(governed.text) == {"id": 1, "ok": True}
    assert governed.declaration == {"declared": False}

    @govern(budget_chars=1000)
    def small() -> list[int]:
        return [1, 2, 3]

    assert small(tool_call_id="call_small") == "[1, 2, 3]"
    assert not any(" LOSS " in line for line in _lines(ledger))


def test_a_budget_is_required() -> None:
    with pytest.raises(ValueError, match="needs a policy or a budget"):
        govern()
