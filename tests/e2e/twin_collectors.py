"""A real collector on SQLite and one on PostgreSQL, fed by the same agent runs, for the
end-to-end tests of traces without the SDK; and one trace's reports from either."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from ctxledger_collector.ops.settings import Settings
from tests.collector.conftest import fresh_postgres_database
from tests.collector.live_collector import LiveCollector


@contextlib.contextmanager
def twin_collectors(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[dict[str, LiveCollector]]:
    """``{"sqlite": …, "postgresql": …}``; neither sweeps during the test, so a verdict
    seen is the one given as soon as the spans were in."""
    sqlite = f"sqlite:///{tmp_path_factory.mktemp(name) / 'ctxledger.db'}"
    with fresh_postgres_database() as postgres, contextlib.ExitStack() as stack:
        yield {
            database: stack.enter_context(
                LiveCollector(Settings(database_url=url, auto_migrate=True, sweep_interval_s=3600))
            )
            for database, url in (("sqlite", sqlite), ("postgresql", postgres))
        }


def trace_reports(collector: LiveCollector, trace_id: str) -> list[dict[str, Any]]:
    with collector.client() as client:
        answer = client.get("/api/v1/reports", params={"trace_id": trace_id})
    answer.raise_for_status()
    found: list[dict[str, Any]] = answer.json()["reports"]
    return found
