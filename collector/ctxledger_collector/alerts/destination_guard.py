"""Where a webhook may be delivered: the sink's own host, resolved once and checked.

Only URLs from the operator's rules file are ever called. Their host is resolved, and
every address it resolves to is checked: cloud metadata endpoints and link-local
addresses are always refused, loopback and unspecified addresses unless the sink says
``allow_loopback: true``. The request then goes to the checked address itself (the host
name kept in ``Host`` and in TLS's server name), so a second DNS answer cannot swap in
another address. Redirects are never followed (see ``sinks``).

Addresses are read as the resolver reads them (``getaddrinfo``), never as text, so
``2852039166``, ``0xa9fea9fe`` or ``169.254.43518`` are 169.254.169.254, and IPv4
addresses embedded in IPv6 ones are checked too. Forwarding uses the same checks
(:mod:`ctxledger_collector.forwarding`, which pins each attempt to the address it checked
the same way); a sink or destination refused whatever DNS
answers (:func:`static_problem`) stops the collector at start-up.
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


LOOPBACK = ipaddress.ip_address("127.0.0.1")


class RefusedDestination(ValueError):
    """The sink's URL names a host that webhooks must not reach."""


class UnresolvedDestination(OSError):
    """The host does not resolve (now): a transient failure, not a refusal."""


@dataclass(frozen=True)
class PinnedRequest:
    """The URL to connect to (host replaced by the checked address), and what keeps the
    original host visible to the receiver: the ``Host`` header and the TLS server name."""

    url: str
    host_header: str
    server_name: str


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: mapped (``::ffff:a.b.c.d``), 6to4,
    Teredo (server and client), NAT64's well-known prefix and IPv4-compatible ``::a.b.c.d``."""
    embedded = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [ipv4 for ipv4 in embedded if ipv4 is not None]


def address_problem(address: IPAddress, allow_loopback: bool) -> str | None:
    """Why a webhook must not go to ``address`` (or to an IPv4 address it embeds), or None."""
    if isinstance(address, ipaddress.IPv6Address):
        for ipv4 in _embedded_ipv4(address):
            problem = _single_address_problem(ipv4, allow_loopback)
            if problem:
                return problem
    return _single_address_problem(address, allow_loopback)


def _single_address_problem(address: IPAddress, allow_loopback: bool) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if (address.is_loopback or address.is_unspecified) and not allow_loopback:
        return "a loopback address (set allow_loopback: true on the sink to allow it)"
    return None


def normal_host(hostname: str) -> str:
    """The host as the resolver sees it: lower case, no trailing dot."""
    return hostname.rstrip(".").lower()


def numeric_addresses(host: str) -> list[IPAddress]:
    """The addresses ``host`` spells numerically, in every form the resolver accepts
    (``2852039166``, ``0xa9fea9fe``, ``169.254.43518``, octal, ``0``, IPv6 with a zone),
    read without DNS; [] for a host name."""
    try:  # an IPv6 literal with a zone the resolver does not know (fe80::1%eth9) still counts
        return [ipaddress.ip_address(host.split("%", 1)[0])]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


def static_problem(hostname: str, allow_loopback: bool) -> str | None:
    """Why ``hostname`` is refused whatever DNS answers (a metadata service's name, a
    numeric address form, ``localhost``), or None: a name is checked when delivering."""
    host = normal_host(hostname)
    if host in METADATA_HOSTS:
        return "a cloud metadata service"
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761: always loopback
        return None if allow_loopback else address_problem(LOOPBACK, allow_loopback)
    for address in numeric_addresses(host):
        problem = address_problem(address, allow_loopback)
        if problem:
            return problem
    return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, as the connection will see them; raises
    :class:`UnresolvedDestination` when it does not resolve."""
    try:
        infos = socket.getaddrinfo(normal_host(host), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise UnresolvedDestination(str(error)) from error
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


def checked_addresses(host: str, port: int, allow_loopback: bool) -> list[IPAddress]:
    """Every address ``host`` resolves to now, each checked; :class:`RefusedDestination`
    when the name or any address is refused (the next connection might pick it),
    :class:`UnresolvedDestination` when it does not resolve."""
    problem = static_problem(host, allow_loopback)
    if problem:
        raise RefusedDestination(f"the host is {problem}")
    addresses = resolve(host, port)
    if not addresses:
        raise UnresolvedDestination("the host resolves to no address")
    for address in addresses:
        problem = address_problem(address, allow_loopback)
        if problem:
            raise RefusedDestination(f"the host resolves to {problem}")
    return addresses


def _netloc(address: IPAddress, port: int | None) -> str:
    literal = f"[{address}]" if address.version == 6 else str(address)
    return f"{literal}:{port}" if port is not None else literal


def pinned_to(url: str, address: IPAddress) -> PinnedRequest:
    """The request for ``url`` sent to ``address`` (one that was checked) itself."""
    parts: SplitResult = urlsplit(url)
    host_header = parts.netloc.rpartition("@")[2]
    pinned = parts._replace(netloc=_netloc(address, parts.port))
    return PinnedRequest(
        url=urlunsplit(pinned),
        host_header=host_header,
        server_name=normal_host(parts.hostname or ""),
    )


def pin_destination(url: str, allow_loopback: bool) -> PinnedRequest:
    """The request to send for ``url``, or :class:`RefusedDestination` saying why not."""
    parts: SplitResult = urlsplit(url)
    host = normal_host(parts.hostname or "")
    if not host:
        raise RefusedDestination("the sink's URL has no host")
    default_port = 443 if parts.scheme == "https" else 80
    try:
        address = checked_addresses(host, parts.port or default_port, allow_loopback)[0]
    except RefusedDestination as error:
        raise RefusedDestination(f"the sink's {str(error).removeprefix('the ')}") from None
    except UnresolvedDestination as error:
        raise RefusedDestination(f"cannot resolve the sink's host: {error}") from None
    return pinned_to(url, address)
