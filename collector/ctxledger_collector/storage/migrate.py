"""Apply the Alembic migrations in ``migrations/`` to the collector database.

No ``alembic.ini`` is involved: the configuration is built here. In an installed wheel
the migrations live inside the package (``ctxledger_collector/migrations``, put there by
hatch's ``force-include``); in a source checkout they are the repository's top-level
``migrations/`` directory.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from ctxledger_collector.storage.database import make_engine

__all__ = [
    "alembic_config",
    "current_revision",
    "downgrade",
    "head_revision",
    "is_up_to_date",
    "migrations_dir",
    "upgrade",
]


def migrations_dir() -> Path:
    """The Alembic script directory: the packaged copy if present, else the checkout's.

    Raises ``FileNotFoundError`` when neither location holds an ``env.py``.
    """
    package_dir = Path(__file__).resolve().parents[1]
    candidates = (
        package_dir / "migrations",  # installed wheel (hatch force-include)
        package_dir.parent.parent / "migrations",  # source checkout: collector/<pkg>/ -> repo
    )
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no Alembic migrations directory found (tried {tried})")


def _script_config() -> Config:
    """A config that knows where the scripts are but not which database to use."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("path_separator", "os")
    return config


def alembic_config(database_url: str) -> Config:
    """An Alembic ``Config`` for ``database_url``, with no ``alembic.ini`` needed."""
    config = _script_config()
    # The config is a ConfigParser: a literal "%" (e.g. a URL-encoded password) is doubled.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def _engine(database_url: str) -> Engine:
    """The collector's engine for ``database_url`` (SQLite pragmas included)."""
    return make_engine(database_url)


def _run(database_url: str, direction: str, revision: str) -> None:
    """Upgrade or downgrade to ``revision`` on one connection, committed at the end."""
    config = alembic_config(database_url)
    engine = _engine(database_url)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            if direction == "upgrade":
                command.upgrade(config, revision)
            else:
                command.downgrade(config, revision)
    finally:
        engine.dispose()


def upgrade(database_url: str, revision: str = "head", partition_runs: int = 100_000) -> None:
    """Migrate the database at ``database_url`` up to ``revision`` (default: head); on
    PostgreSQL, then create the partitions the next runs go to (``partition_runs``
    run ids each)."""
    _run(database_url, "upgrade", revision)
    if not database_url.startswith("sqlite"):
        from ctxledger_collector.storage.database import make_engine
        from ctxledger_collector.storage.partitions import ensure_ahead

        engine = make_engine(database_url)
        try:
            ensure_ahead(engine, partition_runs)
        finally:
            engine.dispose()


def downgrade(database_url: str, revision: str) -> None:
    """Migrate the database at ``database_url`` down to ``revision`` (``"base"``: empty)."""
    _run(database_url, "downgrade", revision)


def _is_missing_sqlite_file(database_url: str) -> bool:
    """True for a plain SQLite file URL whose file does not exist yet.

    Checked so that asking about a database never creates an empty file.
    """
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return False
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return False
    return not Path(database).exists()


def _current_heads(database_url: str) -> tuple[str, ...]:
    """The revisions the database is stamped with (empty when never migrated)."""
    if _is_missing_sqlite_file(database_url):
        return ()
    engine = _engine(database_url)
    try:
        with engine.connect() as connection:
            return tuple(MigrationContext.configure(connection).get_current_heads())
    finally:
        engine.dispose()


def current_revision(database_url: str) -> str | None:
    """The database's current revision, or ``None`` if it was never migrated.

    Raises ``RuntimeError`` if the database is stamped with more than one head.
    """
    heads = _current_heads(database_url)
    if len(heads) > 1:
        raise RuntimeError(f"database has several current revisions: {', '.join(heads)}")
    return heads[0] if heads else None


def head_revision() -> str:
    """The newest revision in the migrations directory.

    Raises ``RuntimeError`` if there is none or the history has several heads.
    """
    heads = ScriptDirectory.from_config(_script_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"expected one head revision, found {len(heads)}: {heads}")
    return heads[0]


def is_up_to_date(database_url: str) -> bool:
    """Whether the database at ``database_url`` is migrated to the head revision."""
    return set(_current_heads(database_url)) == {head_revision()}
