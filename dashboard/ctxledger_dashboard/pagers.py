"""Newer and older buttons under a paged list: by offset or by the API's cursor."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ctxledger_dashboard.page_kit import cursor_page, to_newer_page, to_older_page


def _pager(
    key: str,
    page_size: int,
    page: int,
    total: int,
    shown: int,
    newer: Callable[[], None],
    older: Callable[[], None] | None,
) -> None:
    first = page * page_size
    columns = st.columns([1, 1, 6], vertical_alignment="center")
    columns[0].button(
        "← newer", key=f"{key}:prev", disabled=page == 0, on_click=newer, width="stretch"
    )
    columns[1].button(
        "older →", key=f"{key}:next", disabled=older is None, on_click=older, width="stretch"
    )
    if total:
        columns[2].caption(f"{first + 1}–{first + shown} of {total:,}, newest first")


def page_controls(
    key: str, page_size: int, total: int, shown: int, next_offset: int | None
) -> None:
    """Newer and older buttons for a list paged by offset (page number under ``key``)."""
    page = st.session_state[key]

    def go(to: int) -> Callable[[], None]:
        return lambda: st.session_state.update({key: to})

    older = go(page + 1) if next_offset is not None else None
    _pager(key, page_size, page, total, shown, go(page - 1), older)


def cursor_page_controls(
    key: str, page_size: int, total: int, shown: int, next_cursor: str | None
) -> None:
    """Newer and older buttons for a list paged by cursor (the cursors under ``key``)."""
    page, _ = cursor_page(key)
    older = (lambda: to_older_page(key, next_cursor)) if next_cursor is not None else None
    _pager(key, page_size, page, total, shown, lambda: to_newer_page(key), older)
