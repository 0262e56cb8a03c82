"""The collector's HTTP API, as the dashboard uses it. Nothing here touches a database."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import httpx

DEFAULT_API_URL = "http://127.0.0.1:4318"
#: How long the collector has to answer its liveness probe: a page says it is unreachable
#: this soon, rather than after a query's whole timeout.
PROBE_TIMEOUT_S = 3.0
_START_IT = "Start it with `ctxledger serve` or the whole stack with `ctxledger up`."


class CollectorUnavailable(RuntimeError):
    """The collector could not be reached or answered with an error."""


class CollectorRefused(CollectorUnavailable):
    """The collector answered, and refused the request (4xx): ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def error_message(response: httpx.Response) -> str:
    """What the collector said was wrong: FastAPI's ``detail`` (a sentence, or a list of
    validation errors as ``where: what``), else the body's start."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:300]
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = []
        for error in detail:
            where = ".".join(str(p) for p in error.get("loc", ())[1:]) or "request"
            parts.append(f"{where}: {error.get('msg', error)}")
        return "; ".join(parts)
    return response.text[:300]


def api_url_from_environment() -> str:
    return os.environ.get("CTXLEDGER_API_URL", DEFAULT_API_URL).rstrip("/")


def read_key_from_environment() -> str | None:
    """The dashboard's read key (``CTXLEDGER_READ_KEY``), sent to the collector's API."""
    return os.environ.get("CTXLEDGER_READ_KEY", "").strip() or None


def _page(offset: int, after: str | None) -> dict[str, Any]:
    return {"after": after} if after is not None else {"offset": offset}


class CollectorClient:
    """A small synchronous client; every method returns the API's JSON."""

    def __init__(self, base_url: str, timeout_s: float = 10.0, read_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {read_key}"} if read_key else {}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s, headers=headers)

    def _get(self, path: str, **params: Any) -> Any:
        query = {k: v for k, v in params.items() if v is not None and v != [] and v != ""}
        try:
            response = self._http.get(path, params=query)
        except httpx.HTTPError as error:
            raise CollectorUnavailable(
                f"cannot reach the collector at {self.base_url} ({error.__class__.__name__}). "
                f"Is it running? {_START_IT}"
            ) from error
        if response.status_code == 401:
            raise CollectorUnavailable(
                f"the collector at {self.base_url} needs a read key: set CTXLEDGER_READ_KEY "
                "for the dashboard to one of the collector's CTXLEDGER_READ_KEYS"
            )
        if response.status_code == 404:
            return None
        if 400 <= response.status_code < 500:
            raise CollectorRefused(response.status_code, error_message(response))
        if response.status_code >= 400:
            raise CollectorUnavailable(
                f"the collector at {self.base_url} answered {response.status_code} for "
                f"{path}: {response.text[:300]}"
            )
        return response.json()

    def health(self) -> Any:
        return self._get("/readyz")

    def alive(self, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
        """Whether the collector's process answers ``/healthz`` within ``timeout_s``;
        raises :class:`CollectorUnavailable` saying where it looked and what happened."""
        url = self.base_url
        try:
            response = self._http.get("/healthz", timeout=timeout_s)
        except httpx.TimeoutException as error:
            raise CollectorUnavailable(
                f"the collector at {url} did not answer within {timeout_s:g} s "
                f"({error.__class__.__name__}): is it hung, overloaded or behind a firewall "
                f"that drops packets? {_START_IT}"
            ) from error
        except httpx.HTTPError as error:
            raise CollectorUnavailable(
                f"cannot reach the collector at {url} ({error.__class__.__name__}). "
                f"Is it running? {_START_IT}"
            ) from error
        if response.status_code >= 500:
            raise CollectorUnavailable(
                f"the collector at {url} answered {response.status_code} to /healthz: "
                f"{response.text[:300]}"
            )
        return True

    def runs(
        self, limit: int = 50, offset: int = 0, after: str | None = None, **filters: Any
    ) -> Any:
        """Runs newest first: from ``offset``, or after the cursor ``after`` (a page's
        ``next_cursor``)."""
        return self._get("/api/v1/runs", limit=limit, **_page(offset, after), **filters)

    def run(self, trace_id: str) -> Any:
        return self._get(f"/api/v1/runs/{trace_id}")

    def reports(
        self, limit: int = 100, offset: int = 0, after: str | None = None, **filters: Any
    ) -> Any:
        return self._get("/api/v1/reports", limit=limit, **_page(offset, after), **filters)

    def timeline(self, buckets: int = 48, **filters: Any) -> Any:
        return self._get("/api/v1/stats/timeline", buckets=buckets, **filters)

    def breakdown(self, by: str, limit: int = 20, **filters: Any) -> Any:
        return self._get("/api/v1/stats/breakdown", by=by, limit=limit, **filters)

    def tool(self, name: str, **filters: Any) -> Any:
        # Quoted whole: a tool name may hold "/", "?", "#" or anything else.
        return self._get(f"/api/v1/tools/{quote(name, safe='')}", **filters)

    def alerts(
        self,
        limit: int = 50,
        offset: int = 0,
        rule: str | None = None,
        delivery: str | None = None,
    ) -> Any:
        """Alert notifications (newest first), the alert groups, rules and sinks."""
        return self._get("/api/v1/alerts", limit=limit, offset=offset, rule=rule, delivery=delivery)

    def rejections(self, limit: int = 100, reason: str | None = None) -> Any:
        """The spans the collector rejected at ingest, newest first (None: a collector
        without the rejections API)."""
        return self._get("/api/v1/rejections", limit=limit, reason=reason)
