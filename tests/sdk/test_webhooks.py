"""Standard Webhooks signing and verification (https://www.standardwebhooks.com)."""

from __future__ import annotations

import base64
import json

import pytest

from ctxledger import webhooks
from ctxledger.webhooks import (
    WebhookVerificationError,
    generate_secret,
    sign,
    signature_header,
    signed_headers,
    verify,
)

# The published Standard Webhooks test vector, used by the reference libraries.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

NOW = 1_700_000_000
OLD = "whsec_" + base64.b64encode(b"o" * 24).decode()
NEW = "whsec_" + base64.b64encode(b"n" * 24).decode()
OTHER = "whsec_" + base64.b64encode(b"x" * 24).decode()
BODY = json.dumps({"type": "ledger.loss", "data": {"chars": 42}}).encode()


def headers_for(secrets, body=BODY, msg_id="msg_1", ts=NOW):
    return signed_headers(secrets, msg_id, body, timestamp=ts)


# --- the test vector -------------------------------------------------------------------


def test_sign_reproduces_the_standard_webhooks_vector():
    assert sign(VECTOR_SECRET, VECTOR_ID, VECTOR_TS, VECTOR_BODY) == VECTOR_SIG


def test_secret_without_prefix_signs_the_same():
    bare = VECTOR_SECRET.removeprefix("whsec_")
    assert sign(bare, VECTOR_ID, VECTOR_TS, VECTOR_BODY) == VECTOR_SIG


def test_verify_accepts_the_standard_webhooks_vector():
    headers = {
        "webhook-id": VECTOR_ID,
        "webhook-timestamp": str(VECTOR_TS),
        "webhook-signature": VECTOR_SIG,
    }
    assert verify(VECTOR_BODY, headers, VECTOR_SECRET, now=VECTOR_TS) == {"test": 2432232314}


# --- secrets and headers -----------------------------------------------------------------


def test_generate_secret_is_whsec_and_24_random_bytes():
    first, second = generate_secret(), generate_secret()
    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"), validate=True)) == 24
    assert first != second


def test_generated_secret_round_trips():
    secret = generate_secret()
    assert verify(BODY, headers_for([secret]), secret, now=NOW) == json.loads(BODY)


def test_signed_headers_carry_id_timestamp_signature_and_content_type():
    headers = signed_headers([OLD], "msg_7", BODY, timestamp=NOW)
    assert headers == {
        "webhook-id": "msg_7",
        "webhook-timestamp": str(NOW),
        "webhook-signature": sign(OLD, "msg_7", NOW, BODY),
        "content-type": "application/json",
    }


def test_signed_headers_default_to_the_current_time(monkeypatch):
    monkeypatch.setattr(webhooks.time, "time", lambda: 1_234_567_890.9)
    assert signed_headers([OLD], "msg_1", BODY)["webhook-timestamp"] == "1234567890"


def test_signature_header_has_one_v1_signature_per_secret_in_order():
    header = signature_header([OLD, NEW], "msg_1", NOW, BODY)
    assert header.split(" ") == [sign(OLD, "msg_1", NOW, BODY), sign(NEW, "msg_1", NOW, BODY)]
    assert sign(OLD, "msg_1", NOW, BODY) != sign(NEW, "msg_1", NOW, BODY)


def test_signature_header_treats_a_lone_string_as_one_secret():
    assert signature_header(OLD, "msg_1", NOW, BODY) == sign(OLD, "msg_1", NOW, BODY)


def test_signature_header_needs_a_secret():
    with pytest.raises(WebhookVerificationError, match="no secret"):
        signature_header([], "msg_1", NOW, BODY)


@pytest.mark.parametrize(
    "bad", ["whsec_not base64!", "whsec_", "", "whsec_@@@@", "whsec_abcd$efgh"]
)
def test_malformed_secret_is_rejected_when_signing(bad):
    with pytest.raises(WebhookVerificationError, match="malformed secret"):
        sign(bad, "msg_1", NOW, BODY)


def test_malformed_secret_is_rejected_when_verifying():
    with pytest.raises(WebhookVerificationError, match="malformed secret"):
        verify(BODY, headers_for([OLD]), [OLD, "whsec_%%%"], now=NOW)


def test_verify_needs_a_secret():
    with pytest.raises(WebhookVerificationError, match="no secret"):
        verify(BODY, headers_for([OLD]), [], now=NOW)


# --- round trip and key rotation ---------------------------------------------------------


def test_round_trip_returns_the_payload():
    assert verify(BODY, headers_for([OLD]), OLD, now=NOW) == {
        "type": "ledger.loss",
        "data": {"chars": 42},
    }


def test_str_body_verifies_like_its_utf8_bytes():
    body = json.dumps({"text": "数据丢失"}, ensure_ascii=False)
    headers = headers_for([OLD], body=body.encode())
    assert verify(body, headers, OLD, now=NOW) == {"text": "数据丢失"}


@pytest.mark.parametrize("receiver", [OLD, NEW, [OLD], [NEW]])
def test_signed_with_two_secrets_verifies_with_either(receiver):
    headers = headers_for([OLD, NEW])
    assert verify(BODY, headers, receiver, now=NOW) == json.loads(BODY)


def test_after_rotation_the_new_secret_alone_verifies():
    # The sender dropped the old secret; a receiver already on the new one still accepts.
    headers = headers_for([NEW])
    assert verify(BODY, headers, [NEW], now=NOW) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers, [OLD], now=NOW)


@pytest.mark.parametrize("sender", [OLD, NEW])
def test_receiver_with_several_secrets_accepts_any_of_them(sender):
    assert verify(BODY, headers_for([sender]), [OTHER, OLD, NEW], now=NOW) == json.loads(BODY)


def test_receiver_with_several_secrets_rejects_an_unknown_one():
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers_for([OTHER]), [OLD, NEW], now=NOW)


def test_wrong_secret_is_rejected():
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers_for([OLD]), NEW, now=NOW)


def test_unknown_versions_and_junk_entries_are_skipped():
    good = sign(OLD, "msg_1", NOW, BODY)
    headers = headers_for([OLD])
    headers["webhook-signature"] = f"v2,AAAA v1,%%% nonsense v1,bm9wZQ== {good}"
    assert verify(BODY, headers, OLD, now=NOW) == json.loads(BODY)


def test_a_valid_signature_under_another_version_is_not_accepted():
    good = sign(OLD, "msg_1", NOW, BODY)
    headers = headers_for([OLD])
    headers["webhook-signature"] = good.replace("v1,", "v1a,")
    with pytest.raises(WebhookVerificationError, match="no v1 signature"):
        verify(BODY, headers, OLD, now=NOW)


def test_signatures_are_compared_in_constant_time(monkeypatch):
    calls = []
    real = webhooks.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(webhooks.hmac, "compare_digest", spy)
    verify(BODY, headers_for([OLD]), [NEW, OLD], now=NOW)
    assert len(calls) == 2


# --- tampering ---------------------------------------------------------------------------


def test_tampered_body_is_rejected():
    tampered = BODY.replace(b"42", b"43")
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(tampered, headers_for([OLD]), OLD, now=NOW)


def test_tampered_id_is_rejected():
    headers = headers_for([OLD])
    headers["webhook-id"] = "msg_2"
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers, OLD, now=NOW)


def test_tampered_timestamp_is_rejected():
    headers = headers_for([OLD])
    headers["webhook-timestamp"] = str(NOW + 1)
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers, OLD, now=NOW)


def test_timestamp_is_checked_as_written():
    headers = headers_for([OLD])
    headers["webhook-timestamp"] = "0" + str(NOW)
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify(BODY, headers, OLD, now=NOW)


# --- timestamp tolerance -----------------------------------------------------------------


@pytest.mark.parametrize("offset", [-300, -1, 0, 1, 300])
def test_timestamps_within_five_minutes_either_way_are_accepted(offset):
    assert verify(BODY, headers_for([OLD], ts=NOW + offset), OLD, now=NOW) == json.loads(BODY)


@pytest.mark.parametrize("offset", [-301, -3600])
def test_timestamp_too_old_is_rejected(offset):
    with pytest.raises(WebhookVerificationError, match="timestamp too old"):
        verify(BODY, headers_for([OLD], ts=NOW + offset), OLD, now=NOW)


@pytest.mark.parametrize("offset", [301, 3600])
def test_timestamp_too_new_is_rejected(offset):
    with pytest.raises(WebhookVerificationError, match="timestamp too new"):
        verify(BODY, headers_for([OLD], ts=NOW + offset), OLD, now=NOW)


def test_tolerance_is_configurable():
    headers = headers_for([OLD], ts=NOW - 60)
    assert verify(BODY, headers, OLD, now=NOW, tolerance_s=60) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError, match="timestamp too old"):
        verify(BODY, headers, OLD, now=NOW, tolerance_s=59)


def test_now_defaults_to_the_clock(monkeypatch):
    headers = headers_for([OLD], ts=NOW)
    monkeypatch.setattr(webhooks.time, "time", lambda: float(NOW + 10))
    assert verify(BODY, headers, OLD) == json.loads(BODY)
    monkeypatch.setattr(webhooks.time, "time", lambda: float(NOW + 301))
    with pytest.raises(WebhookVerificationError, match="timestamp too old"):
        verify(BODY, headers, OLD)


@pytest.mark.parametrize("bad", ["soon", "1.5e9", "-5", "1700000000.0"])
def test_non_integer_timestamp_is_rejected(bad):
    headers = headers_for([OLD])
    headers["webhook-timestamp"] = bad
    with pytest.raises(WebhookVerificationError, match="malformed webhook-timestamp"):
        verify(BODY, headers, OLD, now=NOW)


# --- headers -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_header_is_rejected(name):
    headers = headers_for([OLD])
    del headers[name]
    with pytest.raises(WebhookVerificationError, match=f"missing header: {name}"):
        verify(BODY, headers, OLD, now=NOW)


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_empty_header_counts_as_missing(name):
    headers = headers_for([OLD])
    headers[name] = ""
    with pytest.raises(WebhookVerificationError, match=f"missing header: {name}"):
        verify(BODY, headers, OLD, now=NOW)


def test_no_headers_names_all_three():
    with pytest.raises(WebhookVerificationError) as info:
        verify(BODY, {}, OLD, now=NOW)
    assert str(info.value) == "missing header: webhook-id, webhook-timestamp, webhook-signature"


@pytest.mark.parametrize("case", [str.upper, str.title, lambda s: s.replace("webhook", "WebHook")])
def test_header_names_are_case_insensitive(case):
    headers = {case(k): v for k, v in headers_for([OLD]).items()}
    assert "webhook-id" not in headers
    assert verify(BODY, headers, OLD, now=NOW) == json.loads(BODY)


# --- payload -----------------------------------------------------------------------------


def test_validly_signed_body_that_is_not_json_is_rejected():
    body = b"not json"
    with pytest.raises(WebhookVerificationError, match="not JSON"):
        verify(body, headers_for([OLD], body=body), OLD, now=NOW)


def test_verification_error_is_a_value_error():
    assert issubclass(WebhookVerificationError, ValueError)
