"""The SDK end to end without a collector: decorator, messages, request, local ledger."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import ctxledger
from ctxledger._client import Client
from ctxledger_cli import demo


@pytest.fixture
def ledger_file(tmp_path: Path):
    path = tmp_path / "ledger.txt"
    client = ctxledger.configure(service_name="test", export=False, ledger=str(path))
    yield path, client
    client.shutdown()


def _read(path: Path) -> list[str]:
    ctxledger.flush()
    return path.read_text(encoding="utf-8").splitlines()


def test_seed_004_prints_a_loss_line_with_the_lost_ids(ledger_file):
    path, client = ledger_file
    demo.run_seed_004()
    lines = _read(path)
    losses = [line for line in lines if " LOSS " in line]
    assert losses, lines
    assert all("LOSS silent" in line and "lost 30 items" in line for line in losses)
    assert "kb-020" in losses[0]
    assert len(losses) == 1  # step 3 re-sends the cut result: the same loss
    assert len(client.ledger.reports) == 1
    report = client.ledger.reports[0]
    assert report.lost_item_ids == tuple(f"kb-{i:03d}" for i in range(20, 50))
    # Announced as soon as the assembled stage showed the loss.
    assert [m.stage for m in report.stages] == ["original", "serialized", "assembled"]
    assert report.stages[2].request_id == report.request_id
    clean = [line for line in lines if "lookup_order" in line]
    assert clean and not any("LOSS" in line for line in clean)


def test_a_cut_result_re_sent_unchanged_is_one_loss_and_then_still_missing(
    ledger_file: tuple[Path, Client],
) -> None:
    """Cut at step 2, re-sent as it was at step 3: one LOSS line and one report, then a
    still-missing line naming the step of the first loss, as the collector counts it."""
    path, client = ledger_file
    records = [{"id": f"kb-{i:03d}", "text": "退款规则"} for i in range(50)]
    cut = json.dumps(records[:20], ensure_ascii=False)
    call = {"id": "call_1", "type": "function", "function": {"name": "search"}}
    messages: list[dict[str, object]] = [
        {"role": "user", "content": "退款规则是什么"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": cut},
    ]
    with ctxledger.run("kb-agent"):
        ctxledger.measure("serialized", records, tool_call_id="call_1", tool_name="search")
        ctxledger.measure_request({"model": "gpt-4o", "messages": messages})
        messages += [{"role": "assistant", "content": "好"}, {"role": "user", "content": "再查"}]
        ctxledger.measure_request({"model": "gpt-4o", "messages": messages})
    lines = _read(path)
    losses = [line for line in lines if " LOSS " in line]
    assert len(losses) == 1 and "lost 30 items" in losses[0], lines
    assert client.ledger is not None
    [first] = client.ledger.reports
    [again] = client.ledger.still_missing
    assert (again.tool_call_id, again.verdict) == ("call_1", "silent")
    assert again.request_id != first.request_id
    [missing] = [line for line in lines if "still missing" in line]
    assert "search[call_1] still missing (silent): first lost at step " in missing
    assert f"first lost at step {first.step} (silent, 30 items)" in missing
    assert lines.index(missing) > lines.index(losses[0])


def test_decorator_records_original_and_serialized_and_returns_text(ledger_file):
    path, _ = ledger_file

    @ctxledger.tool(name="orders")
    def query_orders(limit: int) -> list[dict[str, object]]:
        return [{"id": i, "buyer": "王五"} for i in range(limit)]

    with ctxledger.run("agent"):
        text = query_orders(3, tool_call_id="call_a")
    assert json.loads(text) == [{"id": i, "buyer": "王五"} for i in range(3)]
    lines = _read(path)
    assert any("orders[call_a] original" in line and "items=3" in line for line in lines)
    assert any("orders[call_a] serialized" in line for line in lines)


def test_async_tool_takes_its_call_id_from_context(ledger_file):
    path, _ = ledger_file

    @ctxledger.tool(serialize=None)
    async def fetch(tool_call_id: str) -> dict[str, str]:
        return {"seen": tool_call_id}

    async def main() -> object:
        with ctxledger.tool_call("call_ctx"):
            return await fetch(tool_call_id="call_ctx")

    assert asyncio.run(main()) == {"seen": "call_ctx"}
    lines = _read(path)
    assert any("fetch[call_ctx] original" in line for line in lines)
    assert not any("fetch[call_ctx] serialized" in line for line in lines)


def test_declared_truncation_with_marker_is_declared_not_silent(ledger_file):
    path, _ = ledger_file
    rows = [{"id": i, "note": "备注" * 10} for i in range(100)]
    kept = {"items": rows[:10], "truncated": True, "kept": 10, "total": 100}
    with ctxledger.run():
        ctxledger.measure("original", rows, tool_call_id="c1", tool_name="q")
        ctxledger.measure(
            "serialized",
            kept,
            tool_call_id="c1",
            tool_name="q",
            declared=True,
            strategy="head_rows",
        )
    lines = _read(path)
    assert any("LOSS declared" in line and "lost 90 items" in line for line in lines), lines


def test_declared_without_marker_is_unmarked(ledger_file):
    path, _ = ledger_file
    rows = [{"id": i} for i in range(30)]
    with ctxledger.run():
        ctxledger.measure("original", rows, tool_call_id="c2")
        ctxledger.measure("serialized", rows[:20], tool_call_id="c2", declared=True, marker=False)
    assert any("LOSS unmarked" in line for line in _read(path))


def test_orphaned_call_in_a_sent_request(ledger_file):
    path, _ = ledger_file
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "f"}}],
        },
    ]
    with ctxledger.run():
        ctxledger.measure_request({"model": "gpt-4o", "messages": messages})
    assert any("LOSS orphaned" in line for line in _read(path))


def test_anthropic_messages_are_measured_by_call_id(ledger_file):
    path, _ = ledger_file
    messages = [
        {"role": "user", "content": "查订单"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "orders", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[1, 2, 3]"}],
        },
    ]
    with ctxledger.run():
        request_id = ctxledger.measure_messages(messages, model="claude-sonnet-4")
        assert ctxledger.measure_request({"model": "claude-sonnet-4", "messages": messages}) == (
            request_id
        )
    lines = _read(path)
    assert any("orders[toolu_1] assembled" in line and "items=3" in line for line in lines)
    assert any("orders[toolu_1] sent" in line for line in lines)
    assert any("tokens=" in line and "/200,000" in line for line in lines)


def test_the_worker_never_writes_back_into_the_agents_run(ledger_file):
    """Jobs carry snapshots: the model the worker reads from a sent body stays on the
    worker, so the next measurement's tokenizer never depends on worker timing."""
    path, _ = ledger_file
    body = json.dumps(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "find orders"},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "call_w", "type": "function", "function": {"name": "f"}}],
                },
                {"role": "tool", "tool_call_id": "call_w", "content": "[1, 2, 3]"},
            ],
        }
    )
    with ctxledger.run("agent") as run:
        ctxledger.measure_request(body.encode())
        ctxledger.flush()
        assert run.model is None
        ctxledger.measure_messages([], model="gpt-4")
        assert run.model == "gpt-4"
    assert any("call_w] sent" in line for line in _read(path))
