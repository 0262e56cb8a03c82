"""Names as the characters they are, in the dashboard: every name it shows (in markdown,
tables, charts, select boxes) goes through :func:`ctxledger.visible.visible`, which shows
a character that is invisible or reorders the text around it (``safe\\u202etxt.exe``
reads ``safe⟨U+202E⟩txt.exe``) as a visible escape; the links behind a name keep the
name itself.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ctxledger.visible import visible

__all__ = ["visible", "visible_data", "visible_frame"]


def visible_data(value: Any) -> Any:
    """A JSON value with every string in it (keys too) ``visible``."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(key): visible_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [visible_data(item) for item in value]
    return value


def visible_frame(data: pd.DataFrame) -> pd.DataFrame:
    """``data`` with every text cell ``visible``. Links stay usable: the dashboard's own
    links are percent-encoded, so they hold no such character."""
    shown = data.copy()
    for name in shown.columns:
        if pd.api.types.is_object_dtype(shown[name]) or pd.api.types.is_string_dtype(shown[name]):
            shown[name] = shown[name].map(lambda v: visible(v) if isinstance(v, str) else v)
    return shown
