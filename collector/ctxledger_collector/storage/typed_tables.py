"""The typed Core table of a sqlmodel model, shared by the table modules."""

from __future__ import annotations

from sqlalchemy import Table
from sqlmodel import SQLModel


def table_of(model: type[SQLModel]) -> Table:
    """The typed Core table of a model (``T.c.trace_id == ...`` is a typed expression)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table
