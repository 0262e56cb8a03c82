"""What the query API logs about a database outage: the database's own first line, never
the statement or its parameters."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from ctxledger_collector.routes.errors import database_message
from tests.collector.conftest import POSTGRES_ADMIN


def test_a_refused_connection_is_named_by_the_driver_s_own_words() -> None:
    # A port nothing listens on: a real connection refused by the real driver.
    engine = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/postgres")
    with pytest.raises(OperationalError) as raised, engine.connect():
        pass
    message = database_message(raised.value)
    assert message.startswith("OperationalError: ")
    assert "127.0.0.1" in message and "\n" not in message


def test_a_failed_statement_is_logged_without_its_sql_or_parameters() -> None:
    engine = create_engine(POSTGRES_ADMIN.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with pytest.raises(OperationalError) as raised, engine.connect() as connection:
            connection.execute(text("SET statement_timeout = 50"))
            connection.execute(text("SELECT pg_sleep(2), :secret"), {"secret": "tool output"})
    finally:
        engine.dispose()
    assert "tool output" in str(raised.value)  # what SQLAlchemy's own text would carry
    message = database_message(raised.value)
    assert message == "QueryCanceled: canceling statement due to statement timeout"


def test_an_error_without_words_is_named_by_its_class() -> None:
    assert database_message(RuntimeError()) == "RuntimeError"
