"""The Alembic migrations build exactly the schema of ``tables.py``, on SQLite and PostgreSQL.

``test_migrated_schema_matches_tables`` is what keeps ``tables.py`` and ``migrations/`` in
step: change a model without adding a migration (or the reverse) and it fails.

PostgreSQL tests create a throwaway database per test through the server named by
``CTXLEDGER_TEST_POSTGRES`` (as ``conftest.py``; default: the local trust-auth server CI starts).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from psycopg import sql
from sqlmodel import Session, SQLModel, select

from ctxledger_collector.storage import migrate
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.partitions import (
    PARTITIONED,
    PARTITIONED_PRIMARY_KEYS,
    is_partition_name,
)
from ctxledger_collector.storage.tables import (
    CallIssuerRow,
    CallRow,
    ManifestRow,
    MeasurementRow,
    ReportRow,
    RunRow,
    StringListRow,
    UnmatchedToolRow,
)

ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "runs",
    "calls",
    "call_issuers",
    "unmatched_tools",
    "string_lists",
    "measurements",
    "manifests",
    "reports",
    "journey_counts",
    "run_journey_counts",
    "alert_events",
    "alert_groups",
    "alert_notifications",
    "rejections",
    "log_records",
}
PG_ADMIN_URL = os.environ.get(
    "CTXLEDGER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(dialect: str, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or a fresh PostgreSQL database dropped after."""
    if dialect == "sqlite":
        yield f"sqlite:///{tmp_path / 'ctxledger.db'}"
        return
    name = f"ctxledger_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = sa.make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _revisions() -> list[Script]:
    """Every revision, base first. The history must be a single line."""
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    revisions = list(reversed(list(script.walk_revisions("base", "heads"))))
    for revision in revisions:
        assert revision.down_revision is None or isinstance(revision.down_revision, str)
    return revisions


def _not_a_partition(name: str | None, kind: str, parents: Any) -> bool:
    """PostgreSQL's partitions of measurements and reports (and their indexes) are
    storage, not schema: the comparison looks at the partitioned tables."""
    if kind == "table":
        return name is None or not is_partition_name(name)
    if kind == "index":
        return not is_partition_name(parents.get("table_name") or "")
    return True


def _schema_differences(database_url: str, metadata: sa.MetaData) -> list[Any]:
    """What autogenerate would change to turn the database into ``metadata``, plus
    primary-key differences (which autogenerate does not compare)."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={
                    "compare_type": True,
                    "compare_server_default": True,
                    "include_name": _not_a_partition,
                },
            )
            differences: list[Any] = list(compare_metadata(context, metadata))
            inspector = sa.inspect(connection)
            for table in metadata.sorted_tables:
                if not inspector.has_table(table.name):
                    continue
                actual = inspector.get_pk_constraint(table.name)["constrained_columns"]
                expected = [column.name for column in table.primary_key.columns]
                if connection.dialect.name == "postgresql" and table.name in PARTITIONED:
                    expected = list(PARTITIONED_PRIMARY_KEYS[table.name])
                if actual != expected:
                    differences.append(("modify_primary_key", table.name, actual, expected))
            return differences
    finally:
        engine.dispose()


def _table_names(database_url: str) -> set[str]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return set(sa.inspect(connection).get_table_names())
    finally:
        engine.dispose()


def _kind(difference: Any) -> str:
    """The operation name of one ``compare_metadata`` entry (column ones come as lists)."""
    return str(difference[0][0] if isinstance(difference, list) else difference[0])


def test_tables_module_defines_every_table() -> None:
    assert set(SQLModel.metadata.tables) == TABLES


def test_first_revision_is_initial() -> None:
    revisions = _revisions()
    assert revisions[0].revision == "0001_initial"
    assert revisions[0].down_revision is None
    assert migrate.head_revision() == revisions[-1].revision


def test_walk_every_revision_up_down_and_up_again(database_url: str) -> None:
    revisions = _revisions()
    assert migrate.current_revision(database_url) is None
    assert not migrate.is_up_to_date(database_url)

    for revision in revisions:
        migrate.upgrade(database_url, revision.revision)
        assert migrate.current_revision(database_url) == revision.revision
    assert migrate.is_up_to_date(database_url)
    assert _table_names(database_url) >= TABLES
    assert _schema_differences(database_url, SQLModel.metadata) == []

    for revision in reversed(revisions):
        migrate.downgrade(database_url, revision.down_revision or "base")
        assert migrate.current_revision(database_url) == revision.down_revision
    assert _table_names(database_url) <= {"alembic_version"}
    assert not migrate.is_up_to_date(database_url)

    migrate.upgrade(database_url)
    assert migrate.current_revision(database_url) == migrate.head_revision()
    assert migrate.is_up_to_date(database_url)
    assert _schema_differences(database_url, SQLModel.metadata) == []


def test_migrated_schema_matches_tables(database_url: str) -> None:
    assert not migrate.is_up_to_date(database_url)
    migrate.upgrade(database_url)
    assert migrate.is_up_to_date(database_url)
    assert _schema_differences(database_url, SQLModel.metadata) == []


def test_schema_comparison_detects_drift(database_url: str) -> None:
    """The comparison above is not vacuous: each kind of drift from tables.py shows up."""
    migrate.upgrade(database_url)
    drifted = sa.MetaData()
    for table in SQLModel.metadata.sorted_tables:
        table.to_metadata(drifted)
    runs = drifted.tables["runs"]
    runs.c.service_name.type = sa.String(length=100)
    runs.c.agent_name.nullable = False
    runs.append_column(sa.Column("extra", sa.Integer(), nullable=True))
    reports = drifted.tables["reports"]
    reports.c.settled.server_default = sa.DefaultClause(sa.true())
    reports.indexes.discard(next(i for i in reports.indexes if i.name == "ix_reports_unsettled"))
    manifests = drifted.tables["manifests"]
    drifted.remove(manifests)
    sa.Table(
        "manifests",
        drifted,
        *(sa.Column(c.name, c.type, nullable=c.nullable) for c in manifests.columns),
        sa.PrimaryKeyConstraint("run_id"),
    )

    kinds = {_kind(d) for d in _schema_differences(database_url, drifted)}
    assert kinds == {
        "modify_type",
        "modify_nullable",
        "add_column",
        "modify_default",
        "remove_index",
        "modify_primary_key",
    }


def test_migrated_database_stores_every_model(database_url: str) -> None:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            run = RunRow(trace_id="t" * 32, agent_name="a", first_seen=1.5, last_seen=2.5)
            session.add(run)
            session.flush()
            assert run.id is not None
            for stage_order, stage in enumerate(("tool_output", "in_request")):
                session.add(
                    MeasurementRow(
                        run_id=run.id,
                        tool_call_id="c",
                        request_key="",
                        stage=stage,
                        stage_order=stage_order,
                        span_number=-(2**63),
                        observed_us=1_500_000,
                        copy_digest=2**63 - 1,
                        chars=9,
                        item_ids_ref=bytes(range(16)),
                        extra='{"k": [1, "两"]}',
                    )
                )
            session.add(
                ManifestRow(
                    run_id=run.id,
                    request_id="r",
                    tool_call_ids_ref=bytes(16),
                    span_number=0,
                    observed_us=1_500_000,
                    copy_digest=0,
                    sequence=2**62,
                    position=2**62,
                    conversation="k",
                    source="genai",
                    telemetry_cut="cut",
                )
            )
            session.add(CallRow(run_id=run.id, tool_call_id="c", call_step=2**62, conversation="k"))
            session.add(
                CallIssuerRow(
                    run_id=run.id, tool_call_id="c", request_id="r", signature=-(2**63),
                    issued_order=2**62,
                )
            )  # fmt: skip
            session.add(
                UnmatchedToolRow(
                    run_id=run.id, span_number=2**63 - 1, signature=1, started_us=2**62,
                    measurement="{}",
                )
            )  # fmt: skip
            session.add(StringListRow(digest=bytes(range(16)), items='["两", "kb-1"]'))
            session.add(
                ReportRow(
                    run_id=run.id,
                    tool_call_id="c",
                    request_key="r",
                    verdict="intact",
                    last_observed_at=2.5,
                    judged_at=3.5,
                    notes='["ok"]',
                )
            )
            session.commit()
        with Session(engine) as session:
            stages = session.exec(select(MeasurementRow.stage).order_by(MeasurementRow.stage))
            assert stages.all() == ["in_request", "tool_output"]
            extremes = session.exec(
                select(MeasurementRow.span_number, MeasurementRow.copy_digest)
            ).first()
            assert extremes == (-(2**63), 2**63 - 1)
            assert session.exec(select(StringListRow.items)).one() == '["两", "kb-1"]'
            report = session.exec(select(ReportRow)).one()
            assert (report.settled, report.lost_tokens, report.notes) == (True, 0, '["ok"]')
    finally:
        engine.dispose()


def test_status_of_a_missing_sqlite_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    assert migrate.current_revision(f"sqlite:///{path}") is None
    assert not migrate.is_up_to_date(f"sqlite:///{path}")
    assert not path.exists()


def test_migrations_never_import_project_code() -> None:
    files = sorted(migrate.migrations_dir().rglob("*.py"))
    assert migrate.migrations_dir() / "env.py" in files
    assert any(f.parent.name == "versions" for f in files)
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n.split(".")[0].startswith("ctxledger")], file


def test_migrations_dir_in_a_checkout_is_the_top_level_one() -> None:
    assert migrate.migrations_dir() == ROOT / "migrations"


def test_migrations_dir_prefers_the_packaged_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "checkout" / "collector" / "ctxledger_collector"
    package.mkdir(parents=True)
    (package / "__init__.py").touch()
    # The module finds the package from its own place inside it: storage/migrate.py.
    monkeypatch.setattr(migrate, "__file__", str(package / "storage" / "migrate.py"))
    with pytest.raises(FileNotFoundError):
        migrate.migrations_dir()

    (tmp_path / "checkout" / "migrations").mkdir()
    (tmp_path / "checkout" / "migrations" / "env.py").touch()
    assert migrate.migrations_dir() == tmp_path / "checkout" / "migrations"

    (package / "migrations").mkdir()
    (package / "migrations" / "env.py").touch()
    assert migrate.migrations_dir() == package / "migrations"


@pytest.mark.slow
def test_wheel_carries_the_migrations(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("ctxledger-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    expected = {
        "ctxledger_collector/migrations/" + str(p.relative_to(ROOT / "migrations"))
        for p in (ROOT / "migrations").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert "ctxledger_collector/migrations/env.py" in expected
    assert expected <= names

    probe = (
        "from ctxledger_collector.storage import migrate; "
        "print(migrate.migrations_dir()); print(migrate.head_revision())"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    where, head = done.stdout.split()
    assert Path(where) == tmp_path / "site" / "ctxledger_collector" / "migrations"
    assert head == migrate.head_revision()
