"""Where a webhook may be delivered: the sink's own host, resolved once and checked.

Only URLs from the operator's rules file are ever called. Their host is resolved, and
every address it resolves to is checked: cloud metadata endpoints and link-local
addresses are always refused, loopback and unspecified addresses unless the sink says
``allow_loopback: true``. The request then goes to the checked address itself (the host
name kept in ``Host`` and in TLS's server name), so a second DNS answer cannot swap in
another address. Redirects are never followed (see ``sinks``).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)


class RefusedDestination(ValueError):
    """The sink's URL names a host that webhooks must not reach."""


@dataclass(frozen=True)
class PinnedRequest:
    """The URL to connect to (host replaced by the checked address), and what keeps the
    original host visible to the receiver: the ``Host`` header and the TLS server name."""

    url: str
    host_header: str
    server_name: str


def address_problem(address: IPAddress, allow_loopback: bool) -> str | None:
    """Why a webhook must not go to ``address``, or None."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if (address.is_loopback or address.is_unspecified) and not allow_loopback:
        return "a loopback address (set allow_loopback: true on the sink to allow it)"
    return None


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise RefusedDestination(f"cannot resolve the sink's host: {error}") from error
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


def _netloc(address: IPAddress, port: int | None) -> str:
    literal = f"[{address}]" if address.version == 6 else str(address)
    return f"{literal}:{port}" if port is not None else literal


def pin_destination(url: str, allow_loopback: bool) -> PinnedRequest:
    """The request to send for ``url``, or :class:`RefusedDestination` saying why not."""
    parts: SplitResult = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise RefusedDestination("the sink's URL has no host")
    if host in METADATA_HOSTS:
        raise RefusedDestination("the sink's host is a cloud metadata service")
    default_port = 443 if parts.scheme == "https" else 80
    addresses = _resolve(host, parts.port or default_port)
    for address in addresses:
        problem = address_problem(address, allow_loopback)
        if problem:  # any bad answer refuses: the next connection might pick it
            raise RefusedDestination(f"the sink's host resolves to {problem}")
    if not addresses:
        raise RefusedDestination("the sink's host resolves to no address")
    host_header = parts.netloc.rpartition("@")[2]
    pinned = parts._replace(netloc=_netloc(addresses[0], parts.port))
    return PinnedRequest(url=urlunsplit(pinned), host_header=host_header, server_name=host)
