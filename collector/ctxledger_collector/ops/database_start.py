"""Open the database a command was given before anything runs on it: one line saying what
is wrong and what to do instead of a driver's traceback."""

from __future__ import annotations

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database_url import (
    DATABASE_ERRORS,
    DatabaseUrlError,
    GivenDatabaseUrl,
)
from ctxledger_collector.storage.migrate import is_up_to_date, upgrade


class SchemaNotMigrated(RuntimeError):
    """The database is behind the latest migration and auto-migration is off."""


def prepare_database(settings: Settings) -> None:
    """Migrate (SQLite by default) or refuse to run on an un-migrated database."""
    if settings.should_auto_migrate:
        upgrade(settings.database_url, partition_runs=settings.partition_runs)
    elif not is_up_to_date(settings.database_url):
        raise SchemaNotMigrated(
            "the database is not at the latest migration. Run `ctxledger db upgrade` "
            "(with CTXLEDGER_DATABASE_URL set), or start with CTXLEDGER_AUTO_MIGRATE=true"
        )


def database_problem(
    settings: Settings, given: GivenDatabaseUrl, migrate: bool = True
) -> str | None:
    """Check the URL ``given`` (the one ``settings`` hold, as the user gave it), then
    migrate the database or check it is migrated (:func:`prepare_database`); the problem
    in one line, or None when the collector can run on it. With ``migrate`` false it only
    looks (a command that starts the collector later checks first and creates nothing)."""
    try:
        url = given.usable()
        if migrate:
            prepare_database(settings)
        elif not is_up_to_date(url) and not settings.should_auto_migrate:
            raise SchemaNotMigrated
    except DatabaseUrlError as error:
        return str(error)
    except SchemaNotMigrated:
        return given.not_migrated()
    except DATABASE_ERRORS as error:
        return given.explain(error)
    return None
