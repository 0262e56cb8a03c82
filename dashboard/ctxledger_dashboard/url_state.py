"""Filters that live in the URL, so every view is a link to share."""

from __future__ import annotations

import streamlit as st

from ctxledger_dashboard.page_kit import TIME_RANGES

#: URL-friendly codes for the time ranges: ``?range=last-24-hours``.
RANGES: dict[str, str] = {label.lower().replace(" ", "-"): label for label in TIME_RANGES}
DEFAULT_RANGE = "last-24-hours" if "last-24-hours" in RANGES else next(iter(RANGES))


def synced(param: str, options: list[str], default: str | None, free: bool = True) -> list[str]:
    """Start the widget ``filter_<param>`` from ``?<param>=`` the first time; return its
    options, extended by a deep-linked value the window no longer holds (if ``free``)."""
    key = f"filter_{param}"
    if key not in st.session_state:
        wanted = st.query_params.get(param)
        st.session_state[key] = wanted if wanted in options or (wanted and free) else default
    current = st.session_state[key]
    return [*options, current] if current is not None and current not in options else options


def to_url(param: str, value: str | list[str] | None, default: str | None = None) -> None:
    """Write a filter to the URL (left out while it has its default)."""
    if value in (None, [], default):
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = value
