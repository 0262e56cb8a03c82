"""Signing and verifying webhooks the Standard Webhooks way.

See https://www.standardwebhooks.com. A webhook carries three headers:

* ``webhook-id``: the message id, unique per message and the same across retries;
* ``webhook-timestamp``: when it was sent, in integer unix seconds;
* ``webhook-signature``: a space-separated list of ``v1,<base64 signature>``, where
  the signature is ``HMAC-SHA256(secret, f"{id}.{timestamp}.{body}")``.

Secrets are written ``whsec_<base64 bytes>``; the prefix is optional on input. During
a key rotation the sender signs with the old and the new secret at once, and a
receiver accepts the message if any of the signatures matches any of its secrets.

Only the standard library is used, so a receiver can verify what ctxledger sends
with any Standard Webhooks library, and ctxledger can verify what they send.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets as _secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_TOLERANCE_S",
    "SECRET_PREFIX",
    "WebhookVerificationError",
    "generate_secret",
    "sign",
    "signature_header",
    "signed_headers",
    "verify",
]

SECRET_PREFIX = "whsec_"
"""The prefix Standard Webhooks secrets are written with."""

DEFAULT_TOLERANCE_S = 300
"""How far, in seconds, a timestamp may be from now in either direction (5 minutes)."""

_SIGNATURE_VERSION = "v1"
_SECRET_BYTES = 24

HEADER_ID = "webhook-id"
HEADER_TIMESTAMP = "webhook-timestamp"
HEADER_SIGNATURE = "webhook-signature"


class WebhookVerificationError(ValueError):
    """A webhook could not be verified, or a secret could not be decoded.

    The message says why: a missing header, a timestamp too old or too new, no
    matching signature, a malformed secret or a body that is not JSON.
    """


def generate_secret() -> str:
    """Return a new random secret: ``whsec_`` and the base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(_secrets.token_bytes(_SECRET_BYTES)).decode("ascii")


def _decode_secret(secret: str) -> bytes:
    """Return the key bytes of a secret written with or without the ``whsec_`` prefix."""
    if not isinstance(secret, str):
        raise WebhookVerificationError(
            f"malformed secret: expected a str, got {type(secret).__name__}"
        )
    encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    encoded = encoded.strip()
    # Tolerate unpadded base64, as the reference libraries do.
    encoded += "=" * (-len(encoded) % 4)
    try:
        key = base64.b64decode(encoded, validate=True)
    except ValueError:  # binascii.Error is one
        # The secret itself stays out of the message: it may end up in a log.
        raise WebhookVerificationError(
            "malformed secret: not base64 (expected 'whsec_<base64>')"
        ) from None
    if not key:
        raise WebhookVerificationError("malformed secret: it is empty")
    return key


def _as_list(secrets: Sequence[str] | str) -> list[str]:
    """One secret or several as a list; a lone ``str`` is one secret, not its characters."""
    return [secrets] if isinstance(secrets, str) else list(secrets)


def _digest(key: bytes, msg_id: str, timestamp: int | str, body: bytes) -> bytes:
    # The timestamp is signed as written in the header, so a receiver signs its text.
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return hmac.new(key, signed, hashlib.sha256).digest()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the ``v1,<base64>`` signature of one message with one secret.

    Args:
        secret: The secret, with or without the ``whsec_`` prefix.
        msg_id: The ``webhook-id`` of the message.
        timestamp: The ``webhook-timestamp`` of the message, in unix seconds.
        body: The exact bytes of the request body.

    Raises:
        WebhookVerificationError: The secret is malformed.
    """
    digest = _digest(_decode_secret(secret), msg_id, timestamp, body)
    return f"{_SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def signature_header(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the ``webhook-signature`` value: one ``v1`` signature per secret.

    Signing with the old and the new secret at once lets receivers rotate keys
    without dropping messages.

    Raises:
        WebhookVerificationError: No secret was given, or one of them is malformed.
    """
    keys = _as_list(secrets)
    if not keys:
        raise WebhookVerificationError("no secret to sign with")
    return " ".join(sign(key, msg_id, timestamp, body) for key in keys)


def signed_headers(
    secrets: Sequence[str], msg_id: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """Return the headers to send a JSON webhook with.

    Args:
        secrets: The secrets to sign with; one signature is sent per secret.
        msg_id: The ``webhook-id``; reuse it when retrying the same message.
        body: The exact bytes that will be sent as the request body.
        timestamp: Unix seconds; defaults to now. Use a fresh one on every attempt.

    Returns:
        ``webhook-id``, ``webhook-timestamp``, ``webhook-signature`` and
        ``content-type: application/json``.
    """
    ts = int(time.time()) if timestamp is None else timestamp
    return {
        HEADER_ID: msg_id,
        HEADER_TIMESTAMP: str(ts),
        HEADER_SIGNATURE: signature_header(secrets, msg_id, ts, body),
        "content-type": "application/json",
    }


def _parse_signatures(header: str) -> list[bytes]:
    """The decoded ``v1`` signatures of a header; other versions and junk are skipped."""
    found: list[bytes] = []
    for entry in header.split():
        version, sep, encoded = entry.partition(",")
        if not sep or version != _SIGNATURE_VERSION:
            continue
        try:
            found.append(base64.b64decode(encoded, validate=True))
        except ValueError:  # binascii.Error is one
            continue
    return found


def verify(
    body: bytes | str,
    headers: Mapping[str, str],
    secrets: Sequence[str] | str,
    *,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> Any:
    """Verify a received webhook and return its parsed JSON payload.

    Args:
        body: The exact request body, as received (a ``str`` is encoded as UTF-8).
        headers: The request headers; names are matched case-insensitively.
        secrets: The receiver's secret, or several (during a key rotation). The
            message is accepted if any signature in the header matches any secret.
        tolerance_s: How far the timestamp may be from ``now``, in the past or in
            the future, in seconds.
        now: The current time in unix seconds; defaults to ``time.time()``.

    Returns:
        The body parsed as JSON.

    Raises:
        WebhookVerificationError: A required header is missing or malformed, the
            timestamp is too old or too new, no signature matches, a secret is
            malformed or none was given, or the body is not JSON.
    """
    keys = [_decode_secret(s) for s in _as_list(secrets)]
    if not keys:
        raise WebhookVerificationError("no secret to verify with")

    lowered = {name.lower(): value for name, value in headers.items()}
    missing = [h for h in (HEADER_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE) if not lowered.get(h)]
    if missing:
        raise WebhookVerificationError(f"missing header: {', '.join(missing)}")
    msg_id = lowered[HEADER_ID]
    raw_timestamp = lowered[HEADER_TIMESTAMP].strip()

    if not (raw_timestamp.isascii() and raw_timestamp.isdigit()):
        raise WebhookVerificationError(
            f"malformed {HEADER_TIMESTAMP}: {raw_timestamp[:32]!r} is not integer unix seconds"
        )
    timestamp = int(raw_timestamp)
    current = time.time() if now is None else now
    if timestamp < current - tolerance_s:
        raise WebhookVerificationError(
            f"timestamp too old: {timestamp} is more than {tolerance_s}s before now"
        )
    if timestamp > current + tolerance_s:
        raise WebhookVerificationError(
            f"timestamp too new: {timestamp} is more than {tolerance_s}s after now"
        )

    data = body.encode() if isinstance(body, str) else bytes(body)
    offered = _parse_signatures(lowered[HEADER_SIGNATURE])
    if not offered:
        raise WebhookVerificationError(f"no v1 signature in {HEADER_SIGNATURE}")
    matched = False
    for key in keys:
        expected = _digest(key, msg_id, raw_timestamp, data)
        for candidate in offered:
            # No early exit: every comparison runs, each in constant time.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise WebhookVerificationError("no matching signature")

    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookVerificationError(f"signature valid but body is not JSON: {exc}") from None
