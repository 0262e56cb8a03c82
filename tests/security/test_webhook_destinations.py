"""Webhooks go only to the operator's URLs, to checked addresses, never by redirect.

A real collector delivers real notifications (seed 004's silent loss, sent by the SDK
over OTLP) to real receivers on loopback; the address rules are checked with real
name resolution.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctxledger_cli import demo
from ctxledger_collector.alerts.config import AlertsConfigError, parse_alerts_config
from ctxledger_collector.alerts.destination_guard import (
    RefusedDestination,
    address_problem,
    pin_destination,
)
from tests.collector.alert_receivers import Receiver
from tests.collector.live_collector import LiveCollector
from tests.collector.test_alerts import (
    SECRET,
    notifications,
    sdk_exporting_to,
    settings_for,
    wait_until,
    webhook,
    write_rules,
)
from tests.collector.test_forwarding_rules import LINK_LOCAL_FORMS, METADATA_FORMS


@contextmanager
def redirecting_to(target: str) -> Iterator[str]:
    """A receiver that answers every POST with 307 to ``target`` (another host)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(307)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


def _name_of_loopback() -> str:
    """This machine's host name, where it resolves to loopback (not ``localhost``, which
    is refused when the rules are loaded)."""
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, 80)}
    except OSError:
        addresses = set()
    if not addresses or not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        pytest.skip(f"the host name {name!r} does not resolve to loopback only here")
    return name


def test_loopback_needs_allowing_and_redirects_are_not_followed(tmp_path: Path) -> None:
    # The redirect points at "localhost" (another host name than 127.0.0.1).
    with (
        Receiver([SECRET]) as allowed,
        Receiver([SECRET]) as unallowed,
        Receiver([SECRET]) as elsewhere,
        redirecting_to(elsewhere.url.replace("127.0.0.1", "localhost")) as redirect,
    ):
        sinks = [
            webhook("allowed", allowed),
            {  # a name resolving to loopback: refused only once resolved, when delivering
                **webhook("unallowed", unallowed),
                "url": unallowed.url.replace("127.0.0.1", _name_of_loopback()),
                "allow_loopback": False,
            },
            {**webhook("redirecting", allowed), "url": redirect},
        ]
        rules = write_rules(
            tmp_path / "alerts.yaml", sinks, rule={"tools": ["search_knowledge"]},
            max_attempts=1,
        )  # fmt: skip
        with LiveCollector(settings_for(f"sqlite:///{tmp_path / 'c.db'}", rules)) as c:
            with sdk_exporting_to(c.url) as flush:
                demo.run_seed_004()
                flush()
            settled = wait_until(
                lambda: (
                    ns
                    if len(ns := notifications(c.url)) == 3
                    and all(n["delivery"] != "pending" for n in ns)
                    else None
                ),
                "three settled notifications",
            )
    by_sink = {n["sink"]: n for n in settled}
    assert by_sink["allowed"]["delivery"] == "delivered"
    assert len(allowed.requests) == 1 and allowed.requests[0].payload is not None
    assert by_sink["unallowed"]["delivery"] == "dead"
    assert "loopback" in by_sink["unallowed"]["last_error"]
    assert unallowed.requests == []  # refused before connecting
    assert by_sink["redirecting"]["delivery"] == "dead"
    assert "redirects are not followed" in by_sink["redirecting"]["last_error"]
    assert elsewhere.requests == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/latest/", "metadata"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://METADATA.google.internal./x", "metadata"),
        ("http://[::ffff:169.254.169.254]/x", "metadata"),
        ("http://169.254.10.1/x", "link-local"),
        ("http://[fe80::1]/x", "link-local"),
        ("http://127.0.0.1:9/x", "loopback"),
        ("http://localhost:9/x", "loopback"),  # refused after resolving the name
        ("http://0.0.0.0:9/x", "loopback"),
        ("http://[::1]:9/x", "loopback"),
        ("http://224.0.0.1/x", "multicast"),
        ("http://no-such-host.invalid/x", "cannot resolve"),
    ],
)
def test_refused_destinations(url: str, reason: str) -> None:
    with pytest.raises(RefusedDestination, match=reason):
        pin_destination(url, allow_loopback=False)


def test_allowing_loopback_never_allows_metadata_or_link_local() -> None:
    for address in ("169.254.169.254", "fd00:ec2::254", "169.254.1.1", "fe80::1"):
        assert address_problem(ipaddress.ip_address(address), allow_loopback=True)
    pinned = pin_destination("http://localhost:8080/hooks?x=1", allow_loopback=True)
    assert pinned.host_header == "localhost:8080" and pinned.server_name == "localhost"
    assert ipaddress.ip_address(pinned.url.split("//")[1].rsplit(":", 1)[0].strip("[]")).is_loopback
    assert pinned.url.endswith(":8080/hooks?x=1")


def test_public_and_private_network_addresses_are_allowed() -> None:
    assert pin_destination("https://10.1.2.3/hook", allow_loopback=False).url == (
        "https://10.1.2.3/hook"
    )
    assert pin_destination("https://[2001:db8::5]:8443/h", allow_loopback=False).url == (
        "https://[2001:db8::5]:8443/h"
    )


@pytest.mark.parametrize("host", METADATA_FORMS + LINK_LOCAL_FORMS)
def test_every_numeric_form_is_refused_when_delivering(host: str) -> None:
    with pytest.raises(RefusedDestination, match=r"metadata|link-local"):
        pin_destination(f"http://{host}/hook", allow_loopback=True)


def _sink_problems(url: str, allow_loopback: bool, kind: str = "webhook") -> list[str]:
    secrets = '\n    secrets: ["whsec_aGVsbG8="]' if kind == "webhook" else ""
    text = (
        "rules: [{name: a, verdicts: [silent]}]\n"
        f"sinks:\n  - type: {kind}\n    name: ops\n    url: '{url}'{secrets}\n"
        f"    allow_loopback: {str(allow_loopback).lower()}\n"
    )
    try:
        parse_alerts_config(text, "alerts.yaml")
    except AlertsConfigError as error:
        return error.problems
    return []


@pytest.mark.parametrize("kind", ["webhook", "slack"])
@pytest.mark.parametrize("host", METADATA_FORMS + LINK_LOCAL_FORMS)
def test_a_sink_always_refused_is_refused_when_loading(host: str, kind: str) -> None:
    (problem,) = _sink_problems(f"http://{host}/hook", allow_loopback=True, kind=kind)
    assert problem.startswith("alerts.yaml:5: sinks[0].url: sink 'ops': the URL's host is a ")
    assert "allow_loopback does not change that" in problem
    assert host not in problem  # the URL may be a credential


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "127.1", "2130706433", "0", "[::1]"])
def test_loopback_without_allowing_is_refused_when_loading(host: str) -> None:
    (problem,) = _sink_problems(f"http://{host}:9/hook", allow_loopback=False)
    assert "a loopback address (set allow_loopback: true on the sink to allow it)" in problem
    assert _sink_problems(f"http://{host}:9/hook", allow_loopback=True) == []
