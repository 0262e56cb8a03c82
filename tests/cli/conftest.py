"""Command-line fixtures: the collector's fresh PostgreSQL database, for the server
commands a user runs against one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.collector.conftest import fresh_postgres_database


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with fresh_postgres_database() as url:
        yield url
