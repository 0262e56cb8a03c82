"""Access keys: parsed from a setting, kept only as SHA-256 digests, checked in constant time.

A setting holds comma-separated keys, each either the key itself or its digest written
``sha256:<64 hex>`` (so a configuration file need not hold the secret). Several keys are
valid at once, which is how a key is rotated: add the new one, move the clients, remove
the old one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

_DIGEST_PREFIX = "sha256:"
_HEX = frozenset("0123456789abcdef")


class InvalidKeySetting(ValueError):
    """A ``sha256:`` entry that is not 64 hex digits."""


def key_digest(key: str) -> str:
    """The ``sha256:<hex>`` form of ``key``, to configure instead of the key itself."""
    return _DIGEST_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random key (256 bits, URL-safe)."""
    return "ctxl_" + secrets.token_urlsafe(32)


def _entry_digest(entry: str, setting: str) -> bytes:
    if not entry.lower().startswith(_DIGEST_PREFIX):
        return hashlib.sha256(entry.encode("utf-8")).digest()
    hexdigest = entry[len(_DIGEST_PREFIX) :].lower()
    if len(hexdigest) != 64 or not set(hexdigest) <= _HEX:
        raise InvalidKeySetting(
            f"{setting}: a sha256: entry needs 64 hex digits after the prefix "
            f"(got {len(hexdigest)} characters)"
        )
    return bytes.fromhex(hexdigest)


@dataclass(frozen=True)
class KeySet:
    """The digests of the valid keys; empty means no key is asked for."""

    digests: tuple[bytes, ...] = ()

    @classmethod
    def parse(cls, text: str, setting: str = "keys") -> KeySet:
        entries = (entry.strip() for entry in text.split(","))
        return cls(tuple(_entry_digest(entry, setting) for entry in entries if entry))

    def __bool__(self) -> bool:
        return bool(self.digests)

    def accepts(self, key: str | None) -> bool:
        """Whether ``key`` is one of the keys: every digest is compared, each in constant
        time, so neither the answer's time nor which key matched leaks."""
        if key is None:
            return False
        presented = hashlib.sha256(key.encode("utf-8")).digest()
        matched = False
        for digest in self.digests:
            matched |= hmac.compare_digest(presented, digest)
        return matched


#: The challenge every 401 carries (RFC 6750 section 3).
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="ctxledger"'}


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None. The scheme is
    case-insensitive and spaces or tabs around and between the parts are tolerated, as
    RFC 9110 (section 11) allows: ``bearer   <token>`` is the same credential."""
    parts = (authorization or "").split(None, 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1].strip()
