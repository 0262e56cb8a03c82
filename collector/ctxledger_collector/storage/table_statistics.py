"""First statistics for PostgreSQL tables and partitions that have none yet.

A table never analysed is planned from guesses: its size from its pages, the same
selectivity for every column (a lookup of a run's reports by call id chose an index
that starts with the run alone and filtered every report of the run for each key, 0.84
ms a key in a run of 5,400 reports, until migration 0010 reordered that index). Autovacuum gives a
new table or partition its first statistics only up to a minute later; the ingest
reaches such sizes in seconds. Once analysed, a table's row count is scaled with its
size by the planner, and autovacuum keeps its statistics fresh from then on, so only
the first statistics are taken here, as soon as a table holds :data:`MIN_ROWS` changed
rows.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

logger = logging.getLogger(__name__)

#: Changed rows a never-analysed table must hold before it is analysed here.
MIN_ROWS = 500

#: How long an ANALYZE waits for its lock (autovacuum may be analysing the same table).
_LOCK_TIMEOUT = "200ms"
_LOCK_NOT_AVAILABLE = "55P03"

_NEVER_ANALYSED = (
    "SELECT relname FROM pg_stat_user_tables "
    "WHERE schemaname = current_schema() AND last_analyze IS NULL "
    "AND last_autoanalyze IS NULL AND n_mod_since_analyze >= %(min_rows)s "
    "ORDER BY relname"
)


def never_analysed_tables(engine: Engine, min_rows: int = MIN_ROWS) -> list[str]:
    """The schema's tables with no statistics and at least ``min_rows`` changed rows."""
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(_NEVER_ANALYSED, {"min_rows": min_rows})
        return [str(name) for (name,) in rows]


def analyse_new_tables(engine: Engine, min_rows: int = MIN_ROWS) -> list[str]:
    """ANALYZE each table :func:`never_analysed_tables` names, in a transaction of its
    own; the names analysed. A table whose lock is not free within :data:`_LOCK_TIMEOUT`
    is left for the next call. Nothing on SQLite, whose lookups name their index."""
    if engine.dialect.name != "postgresql":
        return []
    analysed = []
    for name in never_analysed_tables(engine, min_rows):
        try:
            with engine.begin() as connection:
                connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{_LOCK_TIMEOUT}'")
                connection.exec_driver_sql(f'ANALYZE "{name}"')
        except DBAPIError as error:
            if getattr(error.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                raise
            continue
        analysed.append(name)
    return analysed
