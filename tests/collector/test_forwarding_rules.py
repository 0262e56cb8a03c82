"""Forwarding's pure parts: the settings' syntax, the retry rules, the bounded queue."""

from __future__ import annotations

import email.utils
import json
import threading

import pytest

from ctxledger_collector.forwarding.destinations import (
    Destination,
    ForwardConfigError,
    parse_destinations,
)
from ctxledger_collector.forwarding.queue import ForwardQueue, ForwardRequest
from ctxledger_collector.forwarding.retry import (
    Outcome,
    RetryPolicy,
    Verdict,
    retry_after_s,
    verdict_of,
)
from ctxledger_collector.forwarding.sender import DestinationSender
from ctxledger_collector.ops.settings import Settings

PHOENIX = "http://phoenix:6006/v1/traces"
LANGFUSE = "https://cloud.langfuse.com/api/public/otel/v1/traces"


# --- settings -------------------------------------------------------------------------


def test_comma_separated_urls_and_otel_style_headers() -> None:
    found = parse_destinations(
        f" {PHOENIX} , {LANGFUSE} ", "Authorization=Basic%20cGs6c2s=,x-langfuse-ingestion-version=4"
    )
    headers = {"Authorization": "Basic cGs6c2s=", "x-langfuse-ingestion-version": "4"}
    assert found == [
        Destination(PHOENIX, PHOENIX, headers),
        Destination(LANGFUSE, LANGFUSE, headers),
    ]


def test_a_json_list_gives_each_destination_a_name_and_its_own_headers() -> None:
    forward_to = json.dumps(
        [
            {"url": PHOENIX, "name": "phoenix", "headers": {"Authorization": "Bearer phx"}},
            "http://otel-collector:4318/v1/traces",
        ]
    )
    found = parse_destinations(forward_to, json.dumps({"Authorization": "Bearer all", "x": "1"}))
    assert found == [
        Destination(PHOENIX, "phoenix", {"Authorization": "Bearer phx", "x": "1"}),
        Destination(
            "http://otel-collector:4318/v1/traces",
            "http://otel-collector:4318/v1/traces",
            {"Authorization": "Bearer all", "x": "1"},
        ),
    ]


def test_the_metrics_label_never_shows_credentials_or_a_query() -> None:
    (found,) = parse_destinations("https://user:secret@example.com:8443/v1/traces?token=abc", "")
    assert found.name == "https://example.com:8443/v1/traces"
    assert found.url == "https://user:secret@example.com:8443/v1/traces?token=abc"


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXLEDGER_FORWARD_TO", f"{PHOENIX},{LANGFUSE}")
    monkeypatch.setenv("CTXLEDGER_FORWARD_HEADERS", "api_key=k")
    monkeypatch.setenv("CTXLEDGER_FORWARD_QUEUE_MAX_REQUESTS", "7")
    settings = Settings()
    assert [d.url for d in settings.forward_destinations()] == [PHOENIX, LANGFUSE]
    assert settings.forward_destinations()[0].headers == {"api_key": "k"}
    assert settings.forward_limits().queue_max_requests == 7


@pytest.mark.parametrize(
    ("forward_to", "headers", "says"),
    [
        ("phoenix:6006/v1/traces", "", "not an http(s) URL"),
        ("ftp://host/v1/traces", "", "not an http(s) URL"),
        ("http://host:99999/v1/traces", "", "Port out of range"),
        (f"{PHOENIX},{PHOENIX}", "", "listed twice"),
        ("[1]", "", "neither a URL nor an object"),
        (json.dumps([{"url": PHOENIX, "header": {}}]), "", "unknown key(s) ['header']"),
        ("[oops", "", "invalid JSON"),
        (PHOENIX, "Authorization", "is not name=value"),
        (PHOENIX, "Content-Type=text/plain", "keeps the Content-Type"),
        (PHOENIX, "Bad Name=1", "not a valid header name"),
        (PHOENIX, json.dumps({"x": "a\r\nInjected: 1"}), "one line of text"),
        (PHOENIX, json.dumps({"x": 1}), "one line of text"),
        ("http://169.254.169.254/latest/meta-data", "", "a cloud metadata address"),
        ("http://metadata.google.internal./v1/traces", "", "a cloud metadata service"),
        ("http://[fd00:ec2::254]/v1/traces", "", "a cloud metadata address"),
        ("http://[::ffff:169.254.169.254]/v1/traces", "", "a cloud metadata address"),
        ("http://169.254.10.1:4318/v1/traces", "", "a link-local address"),
        ("http://[fe80::1%25eth0]:4318/v1/traces", "", "a link-local address"),
        ("http://224.0.0.1:4318/v1/traces", "", "a multicast address"),
    ],
)
def test_unusable_settings_are_refused_saying_why(forward_to: str, headers: str, says: str) -> None:
    with pytest.raises(ForwardConfigError) as refused:
        parse_destinations(forward_to, headers)
    assert says in str(refused.value)


#: 169.254.169.254 (the cloud metadata service) as the resolver reads it, in every form.
METADATA_FORMS = [
    "2852039166",
    "2852039166.",
    "0xa9fea9fe",
    "0XA9FEA9FE",
    "169.254.43518",
    "169.16689662",
    "0251.0376.0251.0376",
    "0251.254.169.254",
    "169.254.169.254.",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[::a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::1]",
]
#: Link-local addresses (169.254.0.0/16, fe80::/10) in numeric forms.
LINK_LOCAL_FORMS = [
    "2851995649",
    "0xa9fe0001",
    "169.16646145",
    "[::ffff:a9fe:1]",
    "[fe80::1%25eth9]",
]


@pytest.mark.parametrize("host", METADATA_FORMS)
def test_every_numeric_form_of_the_metadata_address_is_refused(host: str) -> None:
    with pytest.raises(ForwardConfigError, match="names a cloud metadata address"):
        parse_destinations(f"http://{host}/v1/traces", "Authorization=Bearer x")


@pytest.mark.parametrize("host", LINK_LOCAL_FORMS)
def test_every_numeric_form_of_a_link_local_address_is_refused(host: str) -> None:
    with pytest.raises(ForwardConfigError, match="names a link-local address"):
        parse_destinations(f"http://{host}:4318/v1/traces", "")


@pytest.mark.parametrize("host", ["0", "0.0.0.0", "2130706433", "127.1", "017700000001"])
def test_numeric_loopback_forms_stay_allowed_for_a_sidecar(host: str) -> None:
    assert len(parse_destinations(f"http://{host}:4318/v1/traces", "")) == 1


class _Outcomes:
    """What a real sender reports, as a list, and an event once it has given up."""

    def __init__(self) -> None:
        self.counted: list[str] = []
        self.warned: list[str] = []
        self.given_up = threading.Event()

    def count(self, destination: str, outcome: Outcome, size: int) -> None:
        self.counted.append(outcome)
        if outcome == "given_up":
            self.given_up.set()

    def warn_once(self, destination: str, reason: str, message: str) -> None:
        self.warned.append(reason)


def test_the_sender_checks_the_address_again_before_each_attempt() -> None:
    # As if a name had come to resolve to the metadata address after start-up: the
    # destination is built past the start-up check, and the sender refuses it itself
    # (without the check it would try to connect, and retry).
    destination = Destination(
        url="http://0xa9fea9fe/latest/meta-data", name="rebound", headers={"x": "1"}
    )
    queue = ForwardQueue(max_requests=4, max_bytes=1 << 20)
    outcomes = _Outcomes()
    policy = RetryPolicy(base_s=0.01, max_backoff_s=0.02, max_elapsed_s=60.0)
    sender = DestinationSender(destination, queue, policy, timeout_s=30.0, tally=outcomes)
    sender.start()
    queue.put(
        ForwardRequest(body=b"x", content_type="application/x-protobuf", content_encoding=None)
    )
    try:
        assert outcomes.given_up.wait(30)
    finally:
        sender.abandon()
        sender.join(10)
        sender.release()
    assert outcomes.counted == ["given_up"]
    assert outcomes.warned == ["refused: the host is a cloud metadata address"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:4318/v1/traces",  # a collector sidecar
        "http://[::1]:4318/v1/traces",
        "http://localhost:4318/v1/traces",
        "http://10.0.0.7:4318/v1/traces",
        "https://otel.internal.example/v1/traces",
    ],
)
def test_loopback_private_and_named_destinations_are_kept(url: str) -> None:
    assert [d.url for d in parse_destinations(url, "")] == [url]


def test_nothing_configured_is_no_destination() -> None:
    assert parse_destinations("", "") == []
    assert parse_destinations(" , ", "") == []


# --- retry rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, Verdict.DELIVERED),
        (204, Verdict.DELIVERED),
        (408, Verdict.RETRY),
        (429, Verdict.RETRY),
        (500, Verdict.RETRY),
        (502, Verdict.RETRY),
        (503, Verdict.RETRY),
        (504, Verdict.RETRY),
        (301, Verdict.GIVE_UP),
        (400, Verdict.GIVE_UP),
        (401, Verdict.GIVE_UP),
        (403, Verdict.GIVE_UP),
        (404, Verdict.GIVE_UP),
        (413, Verdict.GIVE_UP),
        (415, Verdict.GIVE_UP),
    ],
)
def test_which_answers_are_retried(status: int, verdict: Verdict) -> None:
    assert verdict_of(status) is verdict


def test_backoff_doubles_up_to_its_ceiling_within_its_jitter() -> None:
    policy = RetryPolicy(base_s=0.5, max_backoff_s=4.0, max_elapsed_s=300.0)
    assert [policy.delay_s(retry, None, jitter=1.0) for retry in range(1, 7)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        4.0,
        4.0,
    ]
    assert policy.delay_s(3, None, jitter=0.0) == 1.0  # half of 2.0


def test_retry_after_is_honored_when_longer_than_the_backoff() -> None:
    policy = RetryPolicy(base_s=0.5, max_backoff_s=4.0, max_elapsed_s=300.0)
    assert policy.delay_s(1, "7", jitter=1.0) == 7.0  # beyond the backoff's ceiling too
    assert policy.delay_s(4, "1", jitter=1.0) == 4.0  # the backoff is longer
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert policy.delay_s(1, date, jitter=1.0, now=now) == 12.0


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert retry_after_s("3", now) == 3.0
    assert retry_after_s(" 0 ", now) == 0.0
    assert retry_after_s(email.utils.formatdate(now - 60, usegmt=True), now) == 0.0
    assert retry_after_s(None, now) is None
    assert retry_after_s("soon", now) is None
    assert retry_after_s("-1", now) is None


# --- the queue --------------------------------------------------------------------------


def _request(size: int, tag: int = 0) -> ForwardRequest:
    return ForwardRequest(bytes([tag]) * size, "application/x-protobuf", None)


def test_a_queue_full_by_requests_drops_the_oldest() -> None:
    queue = ForwardQueue(max_requests=2, max_bytes=1_000)
    first, second, third = (_request(10, tag) for tag in (1, 2, 3))
    assert queue.put(first) == [] and queue.put(second) == []
    assert queue.put(third) == [first]
    assert (queue.requests, queue.bytes) == (2, 20)
    assert [queue.get(), queue.get()] == [second, third]


def test_a_queue_full_by_bytes_drops_as_many_of_the_oldest_as_needed() -> None:
    queue = ForwardQueue(max_requests=100, max_bytes=100)
    small = [_request(30, tag) for tag in range(3)]
    for request in small:
        assert queue.put(request) == []
    big = _request(80, 9)
    assert queue.put(big) == small  # 90 + 80 > 100: all three make room
    assert (queue.requests, queue.bytes) == (1, 80)


def test_a_request_larger_than_the_whole_queue_is_dropped_itself() -> None:
    queue = ForwardQueue(max_requests=10, max_bytes=100)
    kept = _request(50, 1)
    queue.put(kept)
    huge = _request(101, 2)
    assert queue.put(huge) == [huge]
    assert queue.drain() == [kept]


def test_a_closed_queue_gives_what_is_left_then_none() -> None:
    queue = ForwardQueue(max_requests=10, max_bytes=100)
    left = _request(5)
    queue.put(left)
    queue.close()
    assert queue.get() == left
    assert queue.get() is None
