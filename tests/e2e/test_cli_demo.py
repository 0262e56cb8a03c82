"""``ctxledger demo --endpoint URL`` as a user runs it: a separate process that exports
to a real OTLP receiver and prints the seed-004 loss on stderr. Seeds 004 and 000 are real
agent loops on the ``anthropic`` and ``openai`` clients against the in-process provider
stand-in: their ``sent`` stages and manifests come from the clients' httpx hooks;
``orphaned_call``, seed 002 and ``clean_journeys`` real loops on LangGraph, the OpenAI
Agents SDK and MCP. The local ledger announces exactly the losses the catalogue expects."""

from __future__ import annotations

import re

from ctxledger import semconv as sc
from ctxledger_cli.demo import EXPECTED_VERDICTS

from .helpers import run_python
from .otlp_receiver import OTLPReceiver


def test_demo_without_a_collector_counts_the_re_sent_loss_once() -> None:
    """Seed 004 cuts the search result at step 2 and re-sends it at step 3: one LOSS line,
    a still-missing line for step 3, and one loss in the summary (as the collector, the
    dashboard and the alerts count it)."""
    completed = run_python("-m", "ctxledger_cli", "demo")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stderr.splitlines()
    losses = [line for line in lines if " LOSS " in line]
    assert len(losses) == 1 and "LOSS silent: search_knowledge[call_search_1]" in losses[0]
    [missing] = [line for line in lines if "still missing" in line and line.startswith("[")]
    assert missing.startswith("[ctxledger] step 3 search_knowledge[call_search_1] still missing")
    assert "first lost at step 2 (silent, 30 items)" in missing
    start = lines.index("1 loss(es) found by the local ledger:")
    assert lines[start + 1 :] == [
        "  silent    search_knowledge[call_search_1] lost 30 items "
        "(re-sent still missing at step 3)"
    ]


def test_demo_exports_spans_and_reports_the_silent_loss(receiver: OTLPReceiver) -> None:
    completed = run_python("-m", "ctxledger_cli", "demo", "--endpoint", receiver.url)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stderr.splitlines()
    losses = [line for line in lines if "LOSS silent" in line]
    assert losses, completed.stderr
    assert any("30 items" in line for line in losses), losses
    assert not any("skipping" in line for line in lines), completed.stderr
    # The summary under "loss(es) found by the local ledger": one line per lost result.
    start = next(i for i, line in enumerate(lines) if "found by the local ledger" in line)
    row = r"  (\w+) +\S+\[(\S+)\] lost \d+ items(?: \(re-sent still missing at step [\d, ]+\))?"
    rows = [re.fullmatch(row, x) for x in lines[start + 1 :]]
    announced = {(m.group(2), m.group(1)) for m in rows if m}
    assert announced == {
        (call_id, verdict)
        for calls in EXPECTED_VERDICTS.values()
        for call_id, verdict in calls.items()
        if verdict != "intact"
    }

    spans = receiver.spans
    assert spans
    assert {s.resource.get(sc.SERVICE_NAME) for s in spans} == {"ctxledger-demo"}
    assert all(r.status == 200 for r in receiver.requests)
    # The search result: 50 items serialized, 20 in each request that carried it.
    search = [
        s.attributes
        for s in spans
        if s.attributes.get(sc.TOOL_CALL_ID) == "call_search_1" and sc.STAGE in s.attributes
    ]
    items = {
        stage: sorted(a[sc.SIZE_ITEMS] for a in search if a[sc.STAGE] == stage)
        for stage in (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT)
    }
    assert items[sc.STAGE_ORIGINAL] == items[sc.STAGE_SERIALIZED] == [50]
    assert items[sc.STAGE_ASSEMBLED] and set(items[sc.STAGE_ASSEMBLED]) == {20}
    assert items[sc.STAGE_SENT] and set(items[sc.STAGE_SENT]) == {20}
    # The real clients' requests: each manifest names the model its client sent.
    models = {
        s.attributes.get(sc.REQUEST_MODEL)
        for s in spans
        if sc.REQUEST_MODEL in s.attributes and s.attributes.get(sc.REQUEST_TOOL_CALL_IDS)
    }
    assert {"claude-sonnet-4-5", "gpt-4o"} <= models
    orders_sent = [
        s.attributes
        for s in spans
        if s.attributes.get(sc.TOOL_CALL_ID) == "call_orders_000"
        and s.attributes.get(sc.STAGE) == sc.STAGE_SENT
    ]
    assert [a[sc.SIZE_ITEMS] for a in orders_sent] == [20]
    # One trace per incident (seed 004 plus the others).
    from ctxledger_cli.demo import INCIDENTS

    assert len({s.trace_id for s in spans}) == len(INCIDENTS)
    # The count the demo prints is the count that arrived, with nothing dropped.
    (summary,) = [line for line in lines if line.startswith("exported ")]
    match = re.fullmatch(r"exported (\d+) spans to (\S+) \((\d+) dropped\)", summary)
    assert match, summary
    assert int(match.group(1)) == len(spans)
    assert match.group(2) == receiver.url
    assert match.group(3) == "0"
