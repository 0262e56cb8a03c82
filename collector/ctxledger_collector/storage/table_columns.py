"""The column kinds the table modules share: 64-bit integers, counts added after their
table, text, references to ``string_lists`` and SQLite's ``WITHOUT ROWID`` option."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, LargeBinary, Text, text
from sqlmodel import Field

#: The table options of a keyed table with small rows: on SQLite the primary key is the
#: table, not a second copy of it.
WITHOUT_ROWID = {"sqlite_with_rowid": False}


def big_integer(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=Column(BigInteger, nullable=nullable))


def added_counter() -> Any:
    """A count added later than its table: existing rows start at 0."""
    return Field(default=0, sa_column=Column(BigInteger, nullable=False, server_default=text("0")))


def text_column(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(Text, nullable=nullable))


def digest_column(nullable: bool = True) -> Any:
    """A reference to a row of ``string_lists``: its 128-bit digest."""
    return Field(default=None, sa_column=Column(LargeBinary(16), nullable=nullable))
