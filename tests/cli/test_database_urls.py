"""Database URLs as users give them to `serve`, `db upgrade`, `db prune` and `up`, run as a
user runs them: the PostgreSQL spellings providers hand out work; a URL that cannot be used
is refused in one line (exit 2, no traceback) naming the problem, what to do, and where the
URL came from, its password hidden."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.collector.live_collector import free_port
from tests.e2e.helpers import run_python, serve_until_ready, subprocess_env

PASSWORD = "hunter2"  # PostgreSQL here trusts loopback: a password is accepted and unused


def _cli(
    workdir: Path, *args: str, database_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(**({"CTXLEDGER_DATABASE_URL": database_url} if database_url else {}))
    return run_python("-m", "ctxledger_cli", *args, cwd=workdir, env=env)


def _spelled(postgres_url: str, scheme: str, password: bool = False) -> str:
    """The fixture's ``postgresql+psycopg://`` URL in another spelling."""
    rest = postgres_url.split("://", 1)[1]
    return (
        f"{scheme}://{rest.replace('postgres@', f'postgres:{PASSWORD}@', 1) if password else rest}"
    )


def _missing_database(postgres_url: str) -> str:
    return _spelled(postgres_url.rsplit("/", 1)[0] + "/ctxledger_no_such_db", "postgres", True)


def _assert_refused(done: subprocess.CompletedProcess[str], prefix: str, *says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    for text in says:
        assert text in lines[0], lines[0]
    assert PASSWORD not in done.stderr + done.stdout


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgres+psycopg"])
def test_provider_spellings_of_postgres_urls_are_migrated_and_served(
    postgres_url: str, scheme: str, tmp_path: Path
) -> None:
    url = _spelled(postgres_url, scheme, password=True)
    upgraded = _cli(tmp_path, "db", "upgrade", "--database-url", url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "is at revision" in upgraded.stdout and PASSWORD not in upgraded.stdout
    ready, stderr = serve_until_ready(
        free_port(), cwd=tmp_path, env=subprocess_env(CTXLEDGER_DATABASE_URL=url)
    )
    assert ready, stderr
    assert PASSWORD not in stderr and "storing in postgresql+psycopg://postgres:***@" in stderr


def test_an_unmigrated_postgres_is_named_as_the_user_gave_it(
    postgres_url: str, tmp_path: Path
) -> None:
    url = _spelled(postgres_url, "postgres", password=True)
    by_flag = _cli(tmp_path, "serve", "--port", str(free_port()), "--database-url", url)
    _assert_refused(
        by_flag,
        "ctxledger serve: --database-url 'postgres://postgres:***@",
        "is not at the latest migration",
        "run `ctxledger db upgrade --database-url URL` with the same URL first",
    )
    assert "CTXLEDGER_DATABASE_URL" not in by_flag.stderr
    by_variable = _cli(tmp_path, "serve", "--port", str(free_port()), database_url=url)
    _assert_refused(
        by_variable,
        "ctxledger serve: CTXLEDGER_DATABASE_URL 'postgres://postgres:***@",
        "run `ctxledger db upgrade` (it reads the same CTXLEDGER_DATABASE_URL) first",
    )
    pruned = _cli(tmp_path, "db", "prune", "--older-than", "1d", "--database-url", url)
    _assert_refused(pruned, "ctxledger db prune: --database-url ", "not at the latest migration")


#: (a URL that cannot be used, what the line must say), the URL built from the fixture's.
BAD_URLS = {
    "missing PostgreSQL database": (
        _missing_database,
        ("does not have; create it (createdb -h 127.0.0.1 -p 5432 -U postgres ",),
    ),
    "unreachable PostgreSQL port": (
        lambda url: f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/ctxledger",
        ("where nothing accepts connections (connection refused); start PostgreSQL there",),
    ),
    "SQLite folder that does not exist": (
        lambda url: "sqlite:////nonexistent-ctxledger-folder/sub/ctxledger.db",
        ("/nonexistent-ctxledger-folder/sub, which does not exist; create the folder",),
    ),
    # sysfs takes no new files, from root either.
    "SQLite folder that is not writable": (
        lambda url: "sqlite:////sys/ctxledger.db",
        ("in /sys, where no file can be created", "choose a folder you can write to"),
    ),
    "unknown scheme": (
        lambda url: f"mysql://root:{PASSWORD}@127.0.0.1/ctxledger",
        ("names a mysql database; ctxledger stores in SQLite or PostgreSQL",),
    ),
    "garbage": (lambda url: "ctxledger.db", ("is not a database URL; give sqlite:///",)),
}


@pytest.mark.parametrize("case", list(BAD_URLS))
@pytest.mark.parametrize(
    ("command", "by_flag"),
    [(("serve",), False), (("db", "upgrade"), True)],
    ids=["serve-variable", "db-upgrade-flag"],
)
def test_a_url_that_cannot_be_used_is_refused_in_one_line(
    case: str, command: tuple[str, ...], by_flag: bool, postgres_url: str, tmp_path: Path
) -> None:
    make, says = BAD_URLS[case]
    url = make(postgres_url)
    port = ("--port", str(free_port())) if command == ("serve",) else ()
    if by_flag:
        done = _cli(tmp_path, *command, *port, "--database-url", url)
        source = "--database-url"
    else:
        done = _cli(tmp_path, *command, *port, database_url=url)
        source = "CTXLEDGER_DATABASE_URL"
    _assert_refused(done, f"ctxledger {' '.join(command)}: {source} '", *says)
    assert not list(tmp_path.iterdir())  # no database file left behind


@pytest.mark.parametrize(
    "case", ["missing PostgreSQL database", "SQLite folder that does not exist"]
)
def test_up_and_prune_refuse_such_a_url_too(case: str, postgres_url: str, tmp_path: Path) -> None:
    make, says = BAD_URLS[case]
    url = make(postgres_url)
    ports = ("--port", str(free_port()), "--dashboard-port", str(free_port()))
    _assert_refused(
        _cli(tmp_path, "up", "--no-demo", *ports, database_url=url),
        "ctxledger up: CTXLEDGER_DATABASE_URL '",
        *says,
    )
    pruned = _cli(tmp_path, "db", "prune", "--older-than", "30d", "--database-url", url)
    _assert_refused(pruned, "ctxledger db prune: --database-url '", *says)
