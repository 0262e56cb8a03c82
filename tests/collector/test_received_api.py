"""The ``received`` stage end to end (contract section 7): an agent's real OpenAI client,
instrumented with the SDK's httpx hooks, talks to the provider stand-in acting as a
server that silently drops the oldest messages of an over-long prompt (ollama's way);
the SDK exports over OTLP/HTTP to a real collector, and the query API tells which tool
result the server did not keep, by how many tokens, and in words."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest

import ctxledger
from ctxledger._client import Client
from ctxledger_cli.provider import ProviderStandIn
from ctxledger_collector.ops.settings import Settings
from tests.collector.alert_receivers import Receiver
from tests.collector.live_collector import LiveCollector

MODEL = "gpt-4o"
WINDOW = 600
OLD = json.dumps([{"id": f"ord-{i}", "note": f"订单 {i} 已发货"} for i in range(40)])
NEW = json.dumps([{"id": f"inv-{i}", "total": i * 10} for i in range(5)])


def _messages() -> list[dict[str, Any]]:
    def call(call_id: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "orders", "arguments": "{}"},
        }

    return [
        {"role": "system", "content": "Answer from the tools."},
        {"role": "user", "content": "Which orders shipped, and what was invoiced?"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_old"), call("call_new")]},
        {"role": "tool", "tool_call_id": "call_old", "content": OLD},
        {"role": "tool", "tool_call_id": "call_new", "content": NEW},
    ]


RULES = """\
rules:
  - name: model-server-discards
    verdicts: [silent, dropped]
    layers: [model_server]
    severity: critical
  - name: elsewhere
    verdicts: [silent, dropped]
    layers: [before_request, request]
sinks:
  - type: webhook
    name: ops
    url: {url}
    secrets: [{secret}]
    allow_loopback: true
"""
SECRET = "whsec_cmVjZWl2ZWQtc3RhZ2UtYWxlcnQtc2lnbmluZy0x"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver([SECRET]) as endpoint:
        yield endpoint


@pytest.fixture
def collector_settings(database_url: str, tmp_path: Path, receiver: Receiver) -> Settings:
    rules = tmp_path / "alerts.yaml"
    rules.write_text(RULES.format(url=receiver.url, secret=SECRET))
    return Settings(
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=3600.0,
        alerts_file=str(rules),
        alert_tick_s=0.1,
        alert_settle_s=0.5,
    )


def _alerts(receiver: Receiver) -> list[dict[str, Any]]:
    """The notifications received, each signed with the sink's secret (verified)."""
    receiver.wait_for(lambda requests: len(requests) >= 1)
    time.sleep(1.0)  # any other notification of the same tick
    requests = receiver.requests
    assert all(r.error is None and r.webhook_id for r in requests), requests
    return [r.payload for r in requests]


@pytest.fixture
def sdk(collector: LiveCollector) -> Iterator[Client]:
    client = ctxledger.configure(service_name="window-agent", endpoint=collector.url, ledger="off")
    yield client
    client.shutdown()
    ctxledger.configure(service_name="idle", export=False, ledger="off")


def _reports(http: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    response = http.get("/api/v1/reports", params={**params, "limit": 100})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["reports"]
    return found


def test_a_result_the_server_dropped_is_reported_with_its_received_stage(
    collector: LiveCollector, sdk: Client, receiver: Receiver
) -> None:
    with ProviderStandIn(context_window=WINDOW, silent_front_discard=True) as provider:
        http = httpx2.Client(event_hooks=ctxledger.httpx_event_hooks())
        model = openai.OpenAI(
            base_url=provider.base_url, api_key="any", http_client=http, max_retries=0
        )
        with ctxledger.run("window-agent"):
            answer = model.chat.completions.create(model=MODEL, messages=_messages())  # type: ignore[arg-type]
        model.close()
    assert answer.usage is not None and answer.usage.prompt_tokens <= WINDOW
    assert ctxledger.flush()

    with collector.client() as api:
        found = {r["tool_call_id"]: r for r in _reports(api)}
    old, new = found["call_old"], found["call_new"]

    # Of two parallel results, the older one fell whole in what the server discarded:
    # dropped, at the server's layer (the stand-in answers like ollama: fp_ollama).
    assert old["verdict"] == "dropped" and "model server" in old["layer"], old
    stages = {s["stage"]: s for s in old["stages"]}
    assert list(stages) == ["sent", "received"] and stages["sent"]["received"] is None
    received = stages["received"]["received"]
    assert received["outcome"] == "dropped" and received["policy"] == "front_discard"
    assert received["input_tokens"] == answer.usage.prompt_tokens
    assert received["counted_tokens"] > WINDOW  # what left the process, whole
    assert received["exact"] is False  # gpt-4o's vocabulary, but not OpenAI's server
    assert received["lost_tokens"] > 0
    assert old["lost_tokens"] == stages["sent"]["tokens"]  # all of it
    assert "the model server read" in received["note"]
    (transition,) = old["transitions"]
    assert (transition["from_stage"], transition["to_stage"]) == ("sent", "received")
    assert transition["lost_tokens"] == stages["sent"]["tokens"]
    assert transition["reasons"] == [received["note"]]

    # The newest one the server kept whole.
    assert new["verdict"] == "intact" and new["layer"] is None
    (kept,) = [s["received"] for s in new["stages"] if s["stage"] == "received"]
    assert kept["outcome"] == "kept" and kept["lost_tokens"] == 0

    # The layer selects it: in the query API, in alert rules and in /metrics.
    with collector.client() as api:
        at_server = _reports(api, layer="model_server")
        assert [r["tool_call_id"] for r in at_server] == ["call_old"]
        assert at_server[0]["layer_name"] == "model_server"
        assert _reports(api, layer="before_request") == []
        wrong = api.get("/api/v1/reports", params={"layer": "modelserver"})
        assert wrong.status_code == 422 and "model_server" in wrong.text
        # The aggregates the Incidents page reads take the layer too.
        for layer, journeys in (("model_server", 1), ("request", 0), (None, 2)):
            params = {"layer": layer} if layer else {}
            timeline = api.get("/api/v1/stats/timeline", params=params).json()
            assert sum(p["journeys"] for p in timeline["points"]) == journeys, layer
            runs = api.get("/api/v1/runs", params=params).json()["runs"]
            assert len(runs) == min(journeys, 1), layer
        tools = api.get("/api/v1/stats/breakdown", params={"layer": "model_server"}).json()
        assert [(r["name"], r["lost_results"]) for r in tools["rows"]] == [("orders", 1)]
        profile = api.get("/api/v1/tools/orders", params={"layer": "model_server"}).json()
        assert profile["verdicts"] == {"dropped": 1}
        assert api.get("/api/v1/stats/timeline", params={"layer": "x"}).status_code == 422
        metrics = api.get("/metrics").text
    assert 'ctxledger_layer_journeys_total{layer="model_server",verdict="dropped"} 1.0' in metrics
    alerts = _alerts(receiver)
    assert [a["rule"] for a in alerts] == ["model-server-discards"], alerts
    assert [e["tool_call_id"] for e in alerts[0]["examples"]] == ["call_old"]


@pytest.mark.parametrize("scale", [0.8, 1.2, 0.55])
def test_a_tokenizer_difference_is_never_a_loss(
    collector: LiveCollector, sdk: Client, scale: float
) -> None:
    """The server keeps everything but counts with another tokenizer (``scale`` times the
    model's own count): 20 % either way is within the approximate tokenizer's tolerance,
    so both results are intact; 45 % fewer tokens than were sent is a loss."""
    with ProviderStandIn(count_scale=scale) as provider:
        http = httpx2.Client(event_hooks=ctxledger.httpx_event_hooks())
        model = openai.OpenAI(
            base_url=provider.base_url, api_key="any", http_client=http, max_retries=0
        )
        with ctxledger.run("window-agent"):
            model.chat.completions.create(model=MODEL, messages=_messages())  # type: ignore[arg-type]
        model.close()
    assert ctxledger.flush()
    with collector.client() as api:
        found = {r["tool_call_id"]: r for r in _reports(api)}
    verdicts = {call: found[call]["verdict"] for call in ("call_old", "call_new")}
    if scale == 0.55:
        assert verdicts["call_old"] in ("silent", "dropped"), found["call_old"]
    else:
        assert verdicts == {"call_old": "intact", "call_new": "intact"}, found
