"""The collector's database URL as a user gives it: the PostgreSQL spellings providers
hand out (``postgres://``, ``postgresql://``) accepted, and for a URL that cannot be used a
one-line reason that names where the URL came from and what to do, its password hidden."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from alembic.util.exc import CommandError
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

DATABASE_URL_ENV = "CTXLEDGER_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///./ctxledger.db"
DATABASE_URL_FLAG = "--database-url"
#: The source of the URL when neither the flag nor the variable gave one.
DEFAULT_SOURCE = "the default database URL"
#: The PostgreSQL driver the server extra installs.
POSTGRES_DRIVER = "psycopg"
EXAMPLES = "sqlite:///path/to/ctxledger.db or postgresql://user@host:5432/dbname"
#: What opening, migrating or reading a database raises when the database is the problem.
DATABASE_ERRORS = (SQLAlchemyError, CommandError)

# A password between "user:" and "@" (for a URL too broken to parse).
_PASSWORD = re.compile(r"(://[^/:@]*:)[^@]*@")


class DatabaseUrlError(ValueError):
    """A database URL the collector cannot use; the message is one line: what is wrong
    and what to do."""


def normalize_database_url(url: str) -> str:
    """``postgres://`` and ``postgresql://`` (with or without a driver) as SQLAlchemy
    names them, on psycopg when no driver is given; any other URL unchanged."""
    url = url.strip()
    scheme, separator, rest = url.partition("://")
    name, _, driver = scheme.partition("+")
    if separator and name.lower() in ("postgres", "postgresql"):
        return f"postgresql+{driver or POSTGRES_DRIVER}://{rest}"
    return url


def redact_database_url(url: str) -> str:
    """The URL to show: its password replaced by ``***``."""
    try:
        return make_url(url.strip()).render_as_string(hide_password=True)
    except ArgumentError:
        return _PASSWORD.sub(r"\1***@", url.strip())


@dataclass(frozen=True)
class GivenDatabaseUrl:
    """A database URL as the user gave it, and where from: ``--database-url``,
    ``CTXLEDGER_DATABASE_URL`` or the default."""

    url: str
    source: str

    @property
    def shown(self) -> str:
        """How messages name it: its source and the URL, password hidden."""
        return f"{self.source} {redact_database_url(self.url)!r}"

    def usable(self) -> str:
        """The URL to connect with. Raises :class:`DatabaseUrlError` when it names no
        database the collector can store in, a driver that is not installed, or a SQLite
        file in a folder that does not exist or cannot be written to."""
        try:
            url = make_url(normalize_database_url(self.url))
        except ArgumentError:
            raise self.error(f"is not a database URL; give {EXAMPLES}") from None
        backend = url.get_backend_name()
        if backend not in ("sqlite", "postgresql"):
            raise self.error(
                f"names a {backend} database; ctxledger stores in SQLite or PostgreSQL: "
                f"give {EXAMPLES}"
            )
        try:
            url.get_dialect().import_dbapi()
        except (NoSuchModuleError, ImportError):
            raise self.error(
                f"needs the driver {url.get_driver_name()!r}, which is not installed; write "
                f"postgresql://… (the {POSTGRES_DRIVER} driver, installed with ctxledger[server])"
            ) from None
        if backend == "sqlite":
            problem = sqlite_path_problem(url.database)
            if problem:
                raise self.error(problem)
        return normalize_database_url(self.url)

    def error(self, problem: str) -> DatabaseUrlError:
        hint = f" (or set {DATABASE_URL_ENV})" if self.source == DEFAULT_SOURCE else ""
        return DatabaseUrlError(f"{self.shown} {problem}{hint}")

    def not_migrated(self) -> str:
        """One line for a database behind the latest migration, naming how to migrate the
        database the user named, the way they named it."""
        if self.source == DATABASE_URL_FLAG:
            how = f"`ctxledger db upgrade {DATABASE_URL_FLAG} URL` with the same URL"
        elif self.source == DATABASE_URL_ENV:
            how = f"`ctxledger db upgrade` (it reads the same {DATABASE_URL_ENV})"
        else:
            how = "`ctxledger db upgrade`"
        return (
            f"{self.shown} is not at the latest migration; run {how} first, or start the "
            "collector with CTXLEDGER_AUTO_MIGRATE=true"
        )

    def explain(self, error: BaseException) -> str:
        """One line for an error met while opening or migrating the database."""
        cause = getattr(error, "orig", None) or error
        text = str(cause).strip()
        first = text.splitlines()[0] if text else type(cause).__name__
        try:
            url = make_url(normalize_database_url(self.url))
        except ArgumentError:
            return str(self.error(f"cannot be used: {first}"))
        if url.password:
            first = first.replace(str(url.password), "***")
        if url.get_backend_name() == "sqlite":
            problem = sqlite_path_problem(url.database)
            return str(self.error(problem or f"cannot be opened: {first}"))
        return str(self.error(_postgres_problem(url, text.lower(), first)))


def _postgres_problem(url: URL, text: str, first: str) -> str:
    host = url.host or "localhost"
    port = url.port or 5432
    where = f"{host}:{port}"
    if "database" in text and "does not exist" in text:
        user = f" -U {url.username}" if url.username else ""
        return (
            f"names the database {url.database!r}, which PostgreSQL at {where} does not "
            f"have; create it (createdb -h {host} -p {port}{user} {url.database}) or name "
            "an existing one"
        )
    if "connection refused" in text:
        return (
            f"points at {where}, where nothing accepts connections (connection refused); "
            "start PostgreSQL there or correct the host and port"
        )
    if "authentication failed" in text or "no password supplied" in text:
        return f"was refused by PostgreSQL at {where} ({first}); correct the user and password"
    if "translate host name" in text or "name or service not known" in text:
        return f"names the host {host!r}, which cannot be resolved; correct the host"
    if "timeout" in text or "timed out" in text:
        return f"points at {where}, which did not answer in time; check the host and port"
    return f"cannot be used: {first}"


def sqlite_path_problem(database: str | None) -> str | None:
    """Why the collector cannot keep a SQLite database at this path, or None. It needs to
    create the file (or write it) and its ``-wal`` and ``-shm`` files beside it."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database).expanduser().absolute()
    folder = path.parent
    if path.is_dir():
        return f"names the folder {path}, not a file; give a file in it, e.g. {path}/ctxledger.db"
    if not folder.exists():
        return (
            f"puts the SQLite file in {folder}, which does not exist; create the folder "
            "(mkdir -p) or choose a file in an existing one"
        )
    if not folder.is_dir():
        return f"puts the SQLite file in {folder}, which is not a folder; choose another path"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return (
            f"puts the SQLite file in {folder}, where no file can be created "
            f"({error.strerror}); choose a folder you can write to"
        )
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        return f"names the SQLite file {path}, which you cannot write; fix its permissions"
    return None


def given_database_url(
    flag_value: str | None = None, environ: Mapping[str, str] = os.environ
) -> GivenDatabaseUrl:
    """The URL the command runs on: ``--database-url``'s value if given, else
    ``CTXLEDGER_DATABASE_URL``, else the default."""
    if flag_value:
        return GivenDatabaseUrl(flag_value, DATABASE_URL_FLAG)
    if environ.get(DATABASE_URL_ENV):
        return GivenDatabaseUrl(environ[DATABASE_URL_ENV], DATABASE_URL_ENV)
    return GivenDatabaseUrl(DEFAULT_DATABASE_URL, DEFAULT_SOURCE)


def served_database_url(
    from_flag: bool, environ: Mapping[str, str] = os.environ
) -> GivenDatabaseUrl:
    """The URL ``serve`` runs on: ``CTXLEDGER_DATABASE_URL`` (which the command line sets
    from ``--database-url``, so every worker reads it), named as the user gave it."""
    return given_database_url(environ.get(DATABASE_URL_ENV) if from_flag else None, environ)
