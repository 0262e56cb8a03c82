"""Whether a listening address is reachable from other machines, and whether that is allowed.

A collector bound to loopback answers only this machine. Anywhere else it must have both
ingest keys (who may write) and read keys (who may read), unless the operator says
``--insecure`` (e.g. a private network behind an authenticating proxy).
"""

from __future__ import annotations

import ipaddress
import socket


def is_loopback_host(host: str) -> bool:
    """True when every address ``host`` names is a loopback address."""
    name = host.strip().strip("[]")
    if not name:
        return False
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(str(address).split("%", 1)[0]).is_loopback for address in addresses
    )


def exposure_problem(
    host: str, *, has_ingest_keys: bool, has_read_keys: bool, insecure: bool
) -> str | None:
    """Why the collector must not listen on ``host`` as configured, or None."""
    if insecure or is_loopback_host(host):
        return None
    missing = [
        name
        for name, present in (
            ("CTXLEDGER_API_KEYS (ingest)", has_ingest_keys),
            ("CTXLEDGER_READ_KEYS (query API, metrics, dashboard)", has_read_keys),
        )
        if not present
    ]
    if not missing:
        return None
    return (
        f"refusing to listen on {host!r}, which other machines can reach, without "
        f"{' and '.join(missing)}: anyone could reach the audit store. Set the keys "
        "(`ctxledger key new` makes one), bind to 127.0.0.1, or pass --insecure to accept "
        "the risk (docs/security.md)"
    )
