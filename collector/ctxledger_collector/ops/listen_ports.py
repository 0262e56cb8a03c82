"""The ports the server commands listen on, bound before anything is served or sent.

Binding first is the check: a port another program holds is refused in one line that
names the command's flag changing it. ``serve`` then serves on the socket bound here (or
handed to it, ``serve --fd``), so what ``serve --demo`` and ``up`` send after it is ready
reaches this collector, never a program that holds the port.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence


def bind_port(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``, bound as uvicorn and Streamlit bind theirs
    (``SO_REUSEADDR``: a port left in TIME_WAIT counts as free, one listened on does not)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except OSError:
        sock.close()
        raise
    return sock


def port_problem(
    command: str,
    host: str,
    port: int,
    flag: str,
    error: OSError,
    usual_holder: str = "another collector or dashboard",
) -> str:
    """The one-line refusal for a port that cannot be bound, with the flag that changes it."""
    where = f"ctxledger {command}: cannot listen on {host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"{where}: the port is already in use ({usual_holder}?); "
            f"stop what listens there or choose another port with {flag}"
        )
    return f"{where}: {error.strerror or error}; choose another port with {flag} or --host"


def reserve_ports(
    command: str, host: str, ports: Sequence[tuple[int, str]]
) -> list[socket.socket] | str:
    """Bind every ``(port, flag)`` in order: the sockets, or the refusal of the first port
    that cannot be bound (nothing stays bound then). The same port twice is refused too."""
    bound: list[socket.socket] = []
    for port, flag in ports:
        try:
            bound.append(bind_port(host, port))
        except OSError as error:
            for sock in bound:
                sock.close()
            return port_problem(command, host, port, flag, error)
    return bound
