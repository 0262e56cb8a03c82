"""Collector fixtures: every storage and API test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine

from ctxledger.verdicts import Tolerances
from ctxledger_collector.judge.store import Store
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from tests.collector.live_collector import LiveCollector

POSTGRES_ADMIN = os.environ.get(
    "CTXLEDGER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@contextlib.contextmanager
def fresh_postgres_database(prefix: str = "ctxledger_test") -> Iterator[str]:
    """A fresh, empty PostgreSQL database (its SQLAlchemy URL), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with fresh_postgres_database() as url:
        yield url


def _migrated_engine(url: str) -> Iterator[Engine]:
    upgrade(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_engine(postgres_url: str) -> Iterator[Engine]:
    """An engine on a fresh, migrated PostgreSQL database."""
    yield from _migrated_engine(postgres_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The `dialect` fixture: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ctxledger.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def database_engine(database_url: str) -> Iterator[Engine]:
    """An engine on a migrated database of the `dialect` fixture."""
    yield from _migrated_engine(database_url)


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A store on a migrated database of the `dialect` fixture (default tolerances)."""
    upgrade(database_url)
    engine = make_engine(database_url)
    yield Store(engine, Tolerances())
    engine.dispose()


@pytest.fixture
def collector_settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        auto_migrate=True,
        incomplete_after_s=120.0,
        sweep_interval_s=3600.0,
    )


@pytest.fixture
def collector(collector_settings: Settings) -> Iterator[LiveCollector]:
    with LiveCollector(collector_settings) as live:
        yield live
