"""Ingest keys and read keys against a real collector over real HTTP.

Read keys guard the query API and ``/metrics``; ingest keys guard ``POST /v1/traces``;
neither opens the other's door; health endpoints stay open; keys may be given as
``sha256:<hex>`` digests and several are valid at once (rotation).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from ctxledger_collector.ops.keys import KeySet, bearer_token, key_digest, new_key
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.collector.otlp_payloads import journey_spans, new_trace_id, proto_body
from tests.reliability.kit import ServeProcess

PROTOBUF = {"content-type": "application/x-protobuf"}
INGEST_KEY, INGEST_KEY_NEXT = new_key(), new_key()
READ_KEY_OLD, READ_KEY_NEW = new_key(), new_key()


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCollector]:
    database = tmp_path_factory.mktemp("keys") / "ctxledger.db"
    settings = Settings(
        database_url=f"sqlite:///{database}",
        auto_migrate=True,
        sweep_interval_s=3600,
        # One of each given as the key, one as its digest: both forms, two at once.
        api_keys=f"{INGEST_KEY}, {key_digest(INGEST_KEY_NEXT)}",
        read_keys=f"{key_digest(READ_KEY_OLD)},{READ_KEY_NEW}",
    )
    with LiveCollector(settings) as collector:
        yield collector


def _ingest(url: str, headers: dict[str, str]) -> httpx.Response:
    body = proto_body(new_trace_id(), journey_spans("call_keys", "req_keys"))
    return httpx.post(f"{url}/v1/traces", content=body, headers={**PROTOBUF, **headers})


def _api_paths(http: httpx.Client) -> list[str]:
    """Every GET route of the query API (from the open OpenAPI document), with its path
    parameters filled in: a route added later is covered without touching this test."""
    fill = {"{trace_id}": "0" * 31 + "1", "{tool}": "search"}
    paths = []
    for path, operations in http.get("/openapi.json").json()["paths"].items():
        if path.startswith("/api/v1") and "get" in operations:
            for name, value in fill.items():
                path = path.replace(name, value)
            assert "{" not in path, f"fill in the parameter of {path}"
            paths.append(path)
    return paths


def test_health_stays_open_and_the_api_needs_a_read_key(guarded: LiveCollector) -> None:
    with httpx.Client(base_url=guarded.url) as http:
        assert http.get("/healthz").status_code == 200
        assert http.get("/readyz").status_code == 200
        paths = _api_paths(http)
        assert len(paths) >= 6
        for path in paths:
            for headers in ({}, bearer("wrong"), bearer(INGEST_KEY), {"authorization": "Basic x"}):
                answer = http.get(path, headers=headers)
                assert answer.status_code == 401, (path, headers, answer.text)
                assert answer.headers["www-authenticate"].startswith("Bearer")
            for key in (READ_KEY_OLD, READ_KEY_NEW):
                assert http.get(path, headers=bearer(key)).status_code != 401, path
        runs = http.get("/api/v1/runs", headers=bearer(READ_KEY_OLD))
        assert runs.status_code == 200 and "runs" in runs.json()


def test_metrics_need_a_read_key(guarded: LiveCollector) -> None:
    assert httpx.get(f"{guarded.url}/metrics").status_code == 401
    assert httpx.get(f"{guarded.url}/metrics", headers=bearer(INGEST_KEY)).status_code == 401
    answer = httpx.get(f"{guarded.url}/metrics", headers=bearer(READ_KEY_NEW))
    assert answer.status_code == 200 and "ctxledger" in answer.text


def test_ingest_needs_an_ingest_key_not_a_read_key(guarded: LiveCollector) -> None:
    assert _ingest(guarded.url, {}).status_code == 401
    assert _ingest(guarded.url, bearer(READ_KEY_NEW)).status_code == 401
    assert _ingest(guarded.url, bearer(INGEST_KEY + "x")).status_code == 401
    assert _ingest(guarded.url, bearer(INGEST_KEY)).status_code == 200
    assert _ingest(guarded.url, bearer(INGEST_KEY_NEXT)).status_code == 200  # by digest
    # The digest itself is not a key: knowing the configuration does not let one in.
    assert _ingest(guarded.url, bearer(key_digest(INGEST_KEY_NEXT))).status_code == 401
    stored = httpx.get(
        f"{guarded.url}/api/v1/reports",
        params={"tool_call_id": "call_keys"},
        headers=bearer(READ_KEY_OLD),
    ).json()
    assert stored["total"] >= 1


def test_every_401_challenges_for_bearer(guarded: LiveCollector) -> None:
    challenge = 'Bearer realm="ctxledger"'
    for headers in ({}, bearer("wrong"), {"authorization": "Basic x"}):
        answer = _ingest(guarded.url, headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == challenge
        answer = httpx.get(f"{guarded.url}/api/v1/runs", headers=headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == challenge


@pytest.mark.parametrize(
    "spelling", ["bearer {}", "BEARER {}", "Bearer   {}", "Bearer\t{}", "bEaReR \t {}"]
)
def test_the_scheme_is_case_insensitive_and_spaces_are_tolerated(
    guarded: LiveCollector, spelling: str
) -> None:
    """RFC 9110 section 11.1: the auth scheme is case-insensitive; 1*SP before the token."""
    assert _ingest(guarded.url, {"authorization": spelling.format(INGEST_KEY)}).status_code == 200
    answer = httpx.get(
        f"{guarded.url}/api/v1/runs", headers={"authorization": spelling.format(READ_KEY_NEW)}
    )
    assert answer.status_code == 200


def test_metrics_can_be_left_open_for_a_scraper(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'open-metrics.db'}",
        auto_migrate=True,
        sweep_interval_s=3600,
        read_keys=READ_KEY_NEW,
        metrics_need_read_key=False,
    )
    with LiveCollector(settings) as collector:
        assert httpx.get(f"{collector.url}/metrics").status_code == 200
        assert httpx.get(f"{collector.url}/api/v1/runs").status_code == 401


def test_a_malformed_digest_is_refused_at_start() -> None:
    with pytest.raises(ValidationError, match="64 hex digits"):
        Settings(read_keys="sha256:abc")
    with pytest.raises(ValidationError, match="64 hex digits"):
        Settings(api_keys="sha256:")


def test_key_sets_and_bearer_headers() -> None:
    keys = KeySet.parse(f" a-key , {key_digest('другой ключ 键')} ,,")
    assert keys.accepts("a-key") and keys.accepts("другой ключ 键")
    assert not keys.accepts("a-key ") and not keys.accepts("") and not keys.accepts(None)
    assert not KeySet.parse("") and not KeySet.parse(" , ")
    assert bearer_token("Bearer  tok ") == "tok" and bearer_token("bearer tok") == "tok"
    assert bearer_token("BEARER\ttok") == "tok" and bearer_token(" bearer tok") == "tok"
    assert bearer_token("Basic tok") is None and bearer_token("Bearer") is None
    assert bearer_token(None) is None
    assert new_key() != new_key() and new_key().startswith("ctxl_")


def test_a_real_serve_process_challenges_and_takes_a_lower_case_scheme(tmp_path: Path) -> None:
    """`ctxledger serve` as deployed (keys from the environment): every keyed endpoint,
    `/metrics` included, answers 401 with `WWW-Authenticate: Bearer realm="ctxledger"`,
    and takes `authorization: bearer <key>` (RFC 9110: the scheme is case-insensitive)."""
    env = {
        "CTXLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ctxledger.db'}",
        "CTXLEDGER_API_KEYS": INGEST_KEY,
        "CTXLEDGER_READ_KEYS": key_digest(READ_KEY_NEW),
    }
    collector = ServeProcess(env, tmp_path / "serve.log").start()
    try:
        with httpx.Client(base_url=collector.url) as http:
            keyed = [*_api_paths(http), "/metrics"]
            challenge = 'Bearer realm="ctxledger"'
            for headers in ({}, bearer("wrong")):
                answer = _ingest(collector.url, headers)
                assert answer.status_code == 401
                assert answer.headers["www-authenticate"] == challenge
                for path in keyed:
                    answer = http.get(path, headers=headers)
                    assert answer.status_code == 401, (path, answer.text)
                    assert answer.headers["www-authenticate"] == challenge, path
            lower = {"authorization": f"bearer {INGEST_KEY}"}
            assert _ingest(collector.url, lower).status_code == 200
            for path in keyed:
                answer = http.get(path, headers={"authorization": f"bearer {READ_KEY_NEW}"})
                assert answer.status_code != 401, (path, answer.text)
    finally:
        collector.stop()
