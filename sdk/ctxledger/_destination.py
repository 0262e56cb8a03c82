"""Which collector a spooled batch belongs to: the URL it was sent to and the credentials
it carried.

Batches the collector could not take wait in a folder of their destination's own
(``<spool>/<host>_<port>-<digest>``), so they are replayed only to the collector they
were meant for, with the same key: two collectors that see one service name (staging and
production) never receive each other's spans. The folder's ``destination.json`` says, for
a person and for ``ctxledger spool``, where its batches go; it names the credential
headers, never their values.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ctxledger._otlp_config import SenderConfig

DESTINATION_FILE = "destination.json"
#: Headers every export carries alike: not part of where (or as whom) it is sent.
_NOT_CREDENTIALS = frozenset({"content-type", "user-agent"})
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


@dataclass(frozen=True)
class Destination:
    url: str
    digest: str
    """sha256 of the URL, every credential header and the client certificate (16 hex)."""
    credential_headers: tuple[str, ...]
    """The names (never the values) of the headers that went into the digest."""

    @classmethod
    def of(cls, config: SenderConfig) -> Destination:
        credentials = sorted(
            (name, value) for name, value in config.headers.items() if name not in _NOT_CREDENTIALS
        )
        material = json.dumps(
            {"url": config.url, "headers": credentials, "client_cert": config.client_cert},
            sort_keys=True,
        )
        digest = hashlib.sha256(material.encode()).hexdigest()[:16]
        return cls(config.url, digest, tuple(name for name, _ in credentials))

    @property
    def folder_name(self) -> str:
        """``<host>_<port>-<digest>``: readable, and one folder per destination."""
        parts = urllib.parse.urlsplit(self.url)
        readable = _UNSAFE.sub("_", parts.netloc or "collector").strip("._")[:60]
        return f"{readable or 'collector'}-{self.digest}"

    def folder(self, spool_root: Path) -> Path:
        return spool_root / self.folder_name

    def description(self, service_name: str | None) -> bytes:
        """The folder's ``destination.json``."""
        text = {
            "url": self.url,
            "service_name": service_name,
            "credential_headers": list(self.credential_headers),
            "digest": self.digest,
        }
        return (json.dumps(text, indent=2) + "\n").encode()
