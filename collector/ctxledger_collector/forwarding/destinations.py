"""Where accepted exports are forwarded: ``CTXLEDGER_FORWARD_TO`` and
``CTXLEDGER_FORWARD_HEADERS`` parsed into checked destinations.

``CTXLEDGER_FORWARD_TO`` is a comma-separated list of URLs, or a JSON list whose items
are URL strings or objects ``{"url": ..., "headers": {...}, "name": ...}``. Each URL is
the destination's full traces endpoint (``http://phoenix:6006/v1/traces``): requests are
POSTed to it as given, no path is appended. Log exports go to the same URL with its
``/v1/traces`` ending made ``/v1/logs``; a destination whose URL does not end so gets
traces only.

``CTXLEDGER_FORWARD_HEADERS`` holds headers sent to every destination: comma-separated
``name=value`` pairs with percent-encoded values, as ``OTEL_EXPORTER_OTLP_HEADERS`` has
them, or a JSON object. A destination's own ``headers`` override these.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ctxledger_collector.alerts.destination_guard import static_problem

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
#: Headers the forwarder sets from the request it forwards, or that HTTP sets itself.
RESERVED_HEADERS = frozenset({"content-type", "content-encoding", "content-length", "host"})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # an HTTP header name (RFC 9110)


class ForwardConfigError(ValueError):
    """A forwarding setting that cannot be used; the collector does not start on it."""


@dataclass(frozen=True)
class Destination:
    url: str
    name: str
    """The ``destination`` label in the metrics and logs: never credentials."""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def logs_url(self) -> str | None:
        """The destination's logs endpoint: its traces URL ending ``/v1/logs`` instead of
        ``/v1/traces`` (query kept); None when the URL does not end so."""
        parts = urlsplit(self.url)
        if not parts.path.endswith(TRACES_PATH):
            return None
        path = parts.path[: -len(TRACES_PATH)] + LOGS_PATH
        return urlunsplit(parts._replace(path=path))

    @property
    def lacks_path(self) -> bool:
        """A URL without a path is almost always a mistake: nothing appends /v1/traces."""
        return urlsplit(self.url).path in ("", "/")


def parse_destinations(forward_to: str, forward_headers: str) -> list[Destination]:
    """The destinations of the two settings; raises :class:`ForwardConfigError`."""
    shared = parse_headers(forward_headers, "CTXLEDGER_FORWARD_HEADERS")
    destinations = [_destination(item, shared) for item in _items(forward_to)]
    seen: set[str] = set()
    for destination in destinations:
        if destination.name in seen:
            raise ForwardConfigError(
                f"CTXLEDGER_FORWARD_TO: {destination.name!r} is listed twice "
                "(give each a distinct URL or name)"
            )
        seen.add(destination.name)
    return destinations


def parse_headers(text: str, setting: str) -> dict[str, str]:
    """``a=1,b=x%20y`` or ``{"a": "1", "b": "x y"}`` as a dict of checked headers."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        return checked_headers(_json(text, setting), setting)
    pairs: dict[str, str] = {}
    for pair in text.split(","):
        if not pair.strip():
            continue
        name, equals, value = pair.partition("=")
        if not equals:
            raise ForwardConfigError(f"{setting}: {pair.strip()!r} is not name=value")
        pairs[name.strip()] = unquote(value.strip())
    return checked_headers(pairs, setting)


def checked_headers(headers: Any, setting: str) -> dict[str, str]:
    if not isinstance(headers, dict):
        raise ForwardConfigError(f"{setting}: headers must be an object of name: value")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise ForwardConfigError(f"{setting}: {name!r} is not a valid header name")
        if name.lower() in RESERVED_HEADERS:
            raise ForwardConfigError(
                f"{setting}: {name} cannot be set; the forwarded request keeps the "
                "Content-Type and Content-Encoding it arrived with"
            )
        if not isinstance(value, str) or "\r" in value or "\n" in value:
            raise ForwardConfigError(f"{setting}: the value of {name} must be one line of text")
        checked[name] = value
    return checked


def _items(forward_to: str) -> list[Any]:
    text = forward_to.strip()
    if not text:
        return []
    if text.startswith("["):
        items = _json(text, "CTXLEDGER_FORWARD_TO")
        if not isinstance(items, list):
            raise ForwardConfigError("CTXLEDGER_FORWARD_TO: expected a JSON list")
        return items
    return [url.strip() for url in text.split(",") if url.strip()]


def _json(text: str, setting: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ForwardConfigError(f"{setting}: invalid JSON: {error}") from None


def _destination(item: Any, shared: dict[str, str]) -> Destination:
    setting = "CTXLEDGER_FORWARD_TO"
    if isinstance(item, str):
        item = {"url": item}
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        raise ForwardConfigError(f"{setting}: {item!r} is neither a URL nor an object with a url")
    unknown = set(item) - {"url", "headers", "name"}
    if unknown:
        raise ForwardConfigError(f"{setting}: unknown key(s) {sorted(unknown)} in {item['url']}")
    url = item["url"].strip()
    label = check_url(url)
    name = item.get("name", label)
    if not isinstance(name, str) or not name.strip():
        raise ForwardConfigError(f"{setting}: the name of {label} must be a non-empty string")
    own = checked_headers(item.get("headers", {}), f"{setting} ({label})")
    return Destination(url=url, name=name.strip(), headers={**shared, **own})


def check_url(url: str) -> str:
    """The URL's label (scheme, host, port and path: no credentials, no query), or
    :class:`ForwardConfigError` when it is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ForwardConfigError(f"CTXLEDGER_FORWARD_TO: {url!r}: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ForwardConfigError(
            f"CTXLEDGER_FORWARD_TO: {url!r} is not an http(s) URL with a host, e.g. "
            "http://phoenix:6006/v1/traces"
        )
    problem = _host_problem(parts.hostname)
    if problem:
        raise ForwardConfigError(f"CTXLEDGER_FORWARD_TO: {url!r} names {problem}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host if port is None else f"{host}:{port}"
    return f"{parts.scheme}://{netloc}{parts.path}"


def _host_problem(hostname: str) -> str | None:
    """Why exports must not be forwarded to ``hostname`` whatever DNS answers, or None.
    Forwarded exports may carry credentials in their headers: a cloud metadata service,
    link-local and multicast addresses are refused, in every numeric form the resolver
    reads (``2852039166``, ``0xa9fea9fe``, ``::ffff:a9fe:a9fe``, ...); loopback is allowed
    (a collector sidecar listens there). Host names are checked again, resolved, before
    each attempt (:mod:`.sender`)."""
    return static_problem(hostname, allow_loopback=True)
