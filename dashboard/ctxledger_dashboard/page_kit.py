"""What every page shares: the API client, cached reads, errors, refresh, filters."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlsplit

import streamlit as st

from ctxledger_dashboard.api_client import (
    CollectorClient,
    CollectorRefused,
    CollectorUnavailable,
    api_url_from_environment,
    read_key_from_environment,
)

TIME_RANGES: dict[str, float | None] = {
    "Last hour": 3600.0,
    "Last 24 hours": 86_400.0,
    "Last 7 days": 7 * 86_400.0,
    "All time": None,
}
REFRESH_SECONDS = 10


@st.cache_resource
def _client(base_url: str, read_key: str | None) -> CollectorClient:
    return CollectorClient(base_url, read_key=read_key)


def api_url() -> str:
    return str(st.session_state.get("api_url") or api_url_from_environment())


def client() -> CollectorClient:
    return _client(api_url(), read_key_from_environment())


@st.cache_data(ttl=5, show_spinner=False)
def cached(method: str, base_url: str, *args: Any, **kwargs: Any) -> Any:
    """A cached call of ``CollectorClient.<method>`` (5 s), keyed by its arguments."""
    return getattr(_client(base_url, read_key_from_environment()), method)(*args, **kwargs)


def fetch(method: str, *args: Any, **kwargs: Any) -> Any:
    """Read from the collector with a spinner; on failure show why and stop the page."""
    try:
        with st.spinner(f"Reading from the collector at {api_url()}…"):
            return cached(method, api_url(), *args, **kwargs)
    except CollectorRefused as error:
        st.error(
            f"**The collector refused this request** ({error.status}): {error.message}",
            icon=":material/block:",
        )
        st.stop()
    except CollectorUnavailable as error:
        st.error(f"**The collector is unreachable.** {error}", icon=":material/power_off:")
        st.stop()


def empty_state(what: str) -> None:
    st.info(
        f"**No {what} yet.** Instrument an agent with the ctxledger SDK (see "
        "docs/instrumenting.md), or send the seeds' demo incidents to this collector:\n\n"
        f"```\nctxledger demo --endpoint {api_url()}\n```",
        icon=":material/inbox:",
    )


def since_for(range_name: str) -> float | None:
    window = TIME_RANGES[range_name]
    return None if window is None else time.time() - window


def when(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _page_when_reachable(render: Callable[[], None]) -> Callable[[], None]:
    """``render``, after a quick probe of the collector: a collector that is down, hung or
    unreachable is said at once, with its URL, instead of a page left loading."""

    def page() -> None:
        fetch("alive")
        render()

    return page


def live(render: Callable[[], None]) -> None:
    """Run a page body, re-running it every few seconds when auto-refresh is on."""
    page = _page_when_reachable(render)
    if st.session_state.get("auto_refresh"):
        st.fragment(run_every=REFRESH_SECONDS)(page)()
    else:
        page()


def cursor_page(key: str) -> tuple[int, str | None]:
    """The page of a list shown under ``key``: its number (0: the newest) and the cursor
    it starts after. The cursors of the pages before it are kept, so "newer" goes back."""
    cursors: list[str | None] = st.session_state.setdefault(key, [None])
    return len(cursors) - 1, cursors[-1]


def to_older_page(key: str, next_cursor: str) -> None:
    st.session_state[key].append(next_cursor)


def to_newer_page(key: str) -> None:
    if len(st.session_state[key]) > 1:
        st.session_state[key].pop()


def to_first_page(key: str) -> None:
    st.session_state[key] = [None]


def absolute(link: str) -> str:
    """A link of this dashboard (``/run?…``) as the browser reaches it, when known."""
    url = st.context.url
    if not url:
        return link
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{link}"


def count(value: int | None) -> str:
    """A count with thousands separators; "—" for none."""
    return "—" if value is None else f"{value:,}"


def plural(n: int, noun: str) -> str:
    """``n`` (with thousands separators) and ``noun``, in the plural unless ``n`` is 1:
    "1 tool result", "2 tool calls"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


#: Wide enough for a whole trace id (32 hex digits) in a table cell, in pixels.
TRACE_ID_WIDTH = 280


def loss_columns() -> dict[str, Any]:
    """How every table of journeys shows when each was seen and the items and tokens it
    lost (Streamlit column settings, by column)."""
    return {
        "seen": st.column_config.DatetimeColumn(format="distance"),
        "lost items": st.column_config.NumberColumn(format="localized"),
        "lost tokens": st.column_config.NumberColumn(format="localized"),
    }


def run_link(trace_id: str, step: int | None = None, tool_call_id: str | None = None) -> str:
    """The dashboard's own deep link to a run, step or journey (relative URL)."""
    link = f"/run?trace_id={trace_id}"
    if step is not None:
        link += f"&step={step}"
    if tool_call_id:
        link += f"&tool_call_id={quote(tool_call_id, safe='')}"
    return link
