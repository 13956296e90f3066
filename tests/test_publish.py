"""The copy published for readers after each commit (issue 11): real syncs against the small emulator, real
DuckDB files, an analyst in a process of their own and a DuckDB 1.4 client in an environment of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from typer.testing import CliRunner

from emulator.server import EmulatorServer
from pipelines.cli import app
from pipelines.console import run_summary
from pipelines.settings import SettingsError, SyncSettings, load_settings
from tests.conftest import fresh, shared_http
from tests.sync_support import ROOT, query, settings_for, sync, sync_job
from warehouse.commit import writing
from warehouse.parquet import current_folder, published_files
from warehouse.publish import PublishError, publish, readable_as
from warehouse.publish_target import MANIFEST, PublishTarget

ANALYST = """
import sys
import duckdb

con = duckdb.connect(sys.argv[1], read_only=True)
print(con.execute("SELECT count(*) FROM decisions").fetchall()[0][0], flush=True)
sys.stdin.readline()
print(con.execute("SELECT count(*) FROM decisions").fetchall()[0][0], flush=True)
"""
"""An analyst's session: it opens the published copy, counts the decisions, waits, counts again."""

OLD_READER = """
import sys
import duckdb

con = duckdb.connect(sys.argv[1], read_only=True)
tables = con.execute("SELECT count(*) FROM decisions").fetchall()[0][0]
view = con.execute("SELECT count(*) FROM v_org_chart").fetchall()[0][0]
at = con.execute("SELECT max(finished_at) FROM sync_runs").fetchall()[0][0]
as_of = [
    con.execute(f"SELECT count(*) FROM {macro}(?)", [at]).fetchall()[0][0]
    for macro in ("users_as_of", "user_groups_as_of", "group_tree_as_of", "user_authorities_as_of")
]
changes = con.execute("SELECT count(*) FROM v_changes").fetchall()[0][0]
print(duckdb.__version__, tables, view, *as_of, changes)
"""
"""A reader on DuckDB 1.4: a table, a (recursive) view, table macros as of the last commit (a TIMESTAMPTZ
fetched, which takes pytz) and the change log of the published copy."""

UV_RUN = (
    "run",
    "--no-project",
    "--isolated",
    "--python",
    "3.11",
    "--with",
    "duckdb==1.4.*",
    "--with",
    "pytz",
)
"""A throwaway environment with DuckDB 1.4, and pytz, which its TIMESTAMPTZ values need (uv caches both)."""

UV_POLARS = ("run", "--no-project", "--isolated", "--python", "3.11", "--with", "polars")
"""A throwaway environment with Polars and no DuckDB."""


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def settings(server: EmulatorServer, migrated: Path) -> SyncSettings:
    """A new warehouse (a copy of the migrated template); a commit that finds the warehouse busy fails at
    once instead of waiting."""
    return settings_for(server, migrated, lock_wait_s=0)


def count(path: Path, sql: str) -> int:
    """The one number a query of a DuckDB file gives."""
    return int(query(path, sql)[0][0])


def insert_decisions(server: EmulatorServer, inserted: int) -> None:
    """New decisions in the service, for the next sync to commit."""
    shared_http().post(
        f"{server.base_url}/_admin/mutate", json={"decisionsInserted": inserted}
    ).raise_for_status()


def temporary_files(folder: Path) -> list[str]:
    """Names in ``folder`` a publish writes aside before moving them in place."""
    return sorted(path.name for path in folder.rglob("*.tmp-*"))


def uv() -> str:
    """The repository's uv (``make`` installs it into ``.tools/bin``), else one on the PATH."""
    local = ROOT / ".tools" / "bin" / "uv"
    found = str(local) if local.is_file() else shutil.which("uv")
    assert found, "uv is needed to run a DuckDB 1.4 client: `make test` installs it in .tools/bin"
    return found


def run_elsewhere(environment: tuple[str, ...], script: str, argument: Path) -> str:
    """Run a Python ``script`` with ``argument`` in a throwaway environment (``uv run`` options), checked;
    returns what it printed."""
    result = subprocess.run(
        [uv(), *environment, "python", "-c", script, str(argument)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={name: value for name, value in os.environ.items() if name != "VIRTUAL_ENV"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_default_path_is_beside_the_warehouse(settings: SyncSettings, tmp_path: Path) -> None:
    assert settings.publish_file == tmp_path / "wh.analytics.duckdb"
    assert settings.publish_target.parquet_manifest == tmp_path / "wh.analytics-parquet" / MANIFEST


def test_an_analyst_on_the_published_copy_never_holds_up_a_sync(
    server: EmulatorServer, settings: SyncSettings
) -> None:
    """The analyst's session stays open through the next sync, which commits without waiting (the lock
    wait is 0); the session keeps reading the state it opened, a new session reads the new one."""
    first = sync(settings)
    published = settings.publish_file
    before = count(published, "SELECT count(*) FROM decisions")
    analyst = subprocess.Popen(
        [sys.executable, "-c", ANALYST, str(published)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert analyst.stdout is not None
        assert int(analyst.stdout.readline()) == before
        insert_decisions(server, 2)
        second = sync(settings)
        still, _ = analyst.communicate("\n", timeout=60)
    finally:
        analyst.kill()

    assert int(still) == before
    assert count(published, "SELECT count(*) FROM decisions") == before + 2
    runs = query(published, "SELECT run_id, status FROM sync_runs ORDER BY finished_at")
    assert runs == [(first.run_id, "succeeded"), (second.run_id, "succeeded")]
    phases = json.loads(query(settings.warehouse, "SELECT phase_seconds FROM sync_runs")[1][0])
    assert set(phases) == {"extract", "checks", "commit", "publish"}
    assert temporary_files(published.parent) == []


@pytest.mark.parametrize("writer_format", ["v1.4.0", "latest"])
def test_duckdb_1_4_reads_a_table_and_a_view_of_the_published_copy(
    server: EmulatorServer, tmp_path: Path, writer_format: str
) -> None:
    """A warehouse this tool created (1.4 storage) is published as a copy of its file; one in DuckDB 2.0's
    own format (created elsewhere, or before the tool chose 1.4) is rebuilt by ``COPY FROM DATABASE``."""
    # A file created here, by the sync or by DuckDB itself: its storage format is what this is about.
    settings = settings_for(server, tmp_path / "wh.duckdb", lock_wait_s=0)
    if writer_format != "v1.4.0":
        config: dict[str, str | bool | int | float | list[str]] = {
            "storage_compatibility_version": writer_format
        }
        duckdb.connect(str(settings.warehouse), config=config).close()
    sync(settings)
    assert readable_as(settings.warehouse, "v1.4.0") is (writer_format == "v1.4.0")
    decisions = count(settings.warehouse, "SELECT count(*) FROM decisions")
    users = count(settings.warehouse, "SELECT count(*) FROM v_org_chart")
    macros = [
        count(settings.warehouse, f"SELECT count(*) FROM {table}")  # noqa: S608 - test names
        for table in ("users", "user_groups", "v_group_tree", "v_user_authorities")
    ]

    printed = run_elsewhere(UV_RUN, OLD_READER, settings.publish_file)

    version, tables, view, *as_of, changes = printed.split()
    assert version.startswith("1.4.")
    assert (int(tables), int(view)) == (decisions, users)
    # As of the last commit, the macros give the tables and views as they are now.
    assert [int(found) for found in as_of] == macros
    assert int(changes) == 0


def test_a_failed_publish_keeps_the_previous_copies_and_fails_no_run(
    server: EmulatorServer, settings: SyncSettings
) -> None:
    """A view that cannot be evaluated fails the Parquet export after the DuckDB copy was written aside:
    the run still commits and says why it did not publish; readers keep both previous copies, and nothing
    written aside is left."""
    settings = settings.model_copy(update={"publish_parquet": True})
    target = settings.publish_target
    first = sync(settings)
    inode, folder = target.path.stat().st_ino, current_folder(target.parquet_root)
    with duckdb.connect(str(settings.warehouse)) as con:
        con.execute("CREATE VIEW v_broken AS SELECT CAST(name AS INTEGER) AS number FROM users")
    insert_decisions(server, 2)

    with dg.DagsterInstance.ephemeral() as instance:
        second = sync_job(settings, instance=instance)
        metadata = sync_runs_metadata(instance, second.run_id)

    warnings = json.loads(query(settings.warehouse, "SELECT warnings FROM sync_runs")[1][0])
    assert len(warnings) == 1
    assert warnings[0].startswith("publish for readers failed, readers keep the previous copy: Conversion")
    assert metadata["publish_error"] == warnings[0] and "published" not in metadata
    assert (
        count(settings.warehouse, "SELECT count(*) FROM decisions")
        == count(target.path, "SELECT count(*) FROM decisions") + 2
    )
    assert target.path.stat().st_ino == inode
    assert query(target.path, "SELECT run_id FROM sync_runs") == [(first.run_id,)]
    assert current_folder(target.parquet_root) == folder
    assert sorted(path.name for path in target.parquet_root.iterdir()) == sorted([MANIFEST, folder])
    assert temporary_files(target.path.parent) == []
    console = Console(record=True, width=300)
    run_summary(console, settings.warehouse, [first.run_id, second.run_id], target)
    summary = console.export_text()
    assert summary.count("published for readers in") == 1 and "publish for readers failed" in summary


def sync_runs_metadata(instance: dg.DagsterInstance, run_id: str) -> dict[str, object]:
    """The metadata of the run's materialization of ``adm/sync_runs``."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    for record in records:
        event = record.event_log_entry.dagster_event
        materialization = event.step_materialization_data.materialization if event else None
        if materialization and materialization.asset_key == dg.AssetKey(["adm", "sync_runs"]):
            return {name: value.value for name, value in materialization.metadata.items()}
    raise AssertionError(f"run {run_id} materialized no adm/sync_runs")


POLARS_READER = """
import json
import sys
from pathlib import Path

import polars as pl

root = Path(sys.argv[1])
files = json.loads((root / "manifest.json").read_text())["files"]
users = pl.read_parquet(root / files["users"])
budget = pl.read_parquet(root / files["v_api_budget"])
history = pl.read_parquet(root / files["users_history"])
print(users["raw"].dtype, budget["api_calls"].dtype, history["valid_from"].dtype, users.height)
"""
"""A reader with Polars and no DuckDB: the manifest, then three files."""


def schemas(files: dict[str, Path]) -> dict[str, tuple[str, pa.Schema]]:
    """Each file's Parquet schema (required or optional columns) and Arrow schema (with its metadata)."""
    # The Parquet schema's text, without its first line (which names the Python object).
    return {
        relation: (str(pq.ParquetFile(path).schema).split("\n", 1)[1], pq.read_schema(path))
        for relation, path in files.items()
    }


def test_parquet_schemas_follow_the_warehouse_not_the_rows_and_polars_reads_them_without_casts(
    settings: SyncSettings,
) -> None:
    """Every table and view is a file the manifest names; a column is required only where the warehouse
    says NOT NULL, whatever the rows, so two publishes (one without NULLs, one with) have the very same
    schemas, descriptions included. Each publish writes a folder of its own and replaces the manifest; the
    folder it replaced stays for readers in the middle of a read, older ones go. Polars, without DuckDB,
    reads raw as a string, counts as 64-bit integers (not 38-digit decimals) and instants in UTC."""
    settings = settings.model_copy(update={"publish_parquet": True})
    target = settings.publish_target
    sync(settings)
    first = current_folder(target.parquet_root)
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        relations = con.execute(
            "SELECT table_name FROM duckdb_tables() UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
        rows = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0] for (name,) in relations}  # noqa: S608
        email = con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'users' AND column_name = 'email'"
        ).fetchall()[0][0]

    files = published_files(target.parquet_root)
    assert {relation: pq.read_metadata(path).num_rows for relation, path in files.items()} == rows
    assert rows["decisions"] > 0 and rows["v_user_profile"] > 0
    assert pq.read_schema(files["users"]).metadata[b"description"].startswith(b"The users of the tenant")

    published = {}
    for label, phone in (("without-nulls", "'+1 555 0100'"), ("with-nulls", "NULL")):
        with writing(settings.warehouse, "a test", 0) as con:
            con.execute(f"UPDATE users SET mobile_phone = {phone}")  # noqa: S608 - a test's literal
            publish(con, target, label)
        assert current_folder(target.parquet_root).endswith(f"-{label}")
        published[label] = schemas(published_files(target.parquet_root))
    folders = sorted(path.name for path in target.parquet_root.iterdir() if path.name != MANIFEST)

    assert published["without-nulls"] == published["with-nulls"]
    users = published["with-nulls"]["users"][1]
    assert (users.field("tenant_id").nullable, users.field("mobile_phone").nullable) == (False, True)
    assert users.field("raw").type == pa.string()
    assert users.field("email").metadata == {b"description": email.encode()}
    assert [name.rsplit("-", 2)[1:] for name in folders] == [["without", "nulls"], ["with", "nulls"]]
    assert not (target.parquet_root / first).exists()
    assert temporary_files(target.parquet_root) == []
    polars = run_elsewhere(UV_POLARS, POLARS_READER, target.parquet_root).split()
    assert polars == ["String", "Int64", "Datetime(time_unit='us',", "time_zone='UTC')", str(rows["users"])]


def test_a_publish_path_that_is_the_warehouse_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    warehouse, spelled = tmp_path / "wh.duckdb", str(tmp_path / "sub" / ".." / "wh.duckdb")
    monkeypatch.setenv("ADM_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("ADM_PUBLISH_PATH", spelled)
    with pytest.raises(SettingsError) as refused:
        load_settings()
    monkeypatch.delenv("ADM_WAREHOUSE")
    flag = CliRunner().invoke(app, ["extract", "--warehouse", str(warehouse)])

    assert str(refused.value) == (
        f"ADM_PUBLISH_PATH={spelled!r} is not accepted: expected the path of a DuckDB file other than the "
        f"warehouse (ADM_WAREHOUSE) ({spelled} is the warehouse itself)"
    )
    assert flag.exit_code == 2
    assert flag.output.strip().splitlines() == [
        f"error: --warehouse: {warehouse} is ADM_PUBLISH_PATH, where the copy for readers is published"
    ]


def test_a_storage_version_duckdb_does_not_know_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADM_PUBLISH_STORAGE_VERSION", "1.4")
    with pytest.raises(SettingsError) as refused:
        load_settings()

    assert str(refused.value).startswith(
        "ADM_PUBLISH_STORAGE_VERSION='1.4' is not accepted: expected a DuckDB storage version such as v1.4.0"
    )
    assert "\n" not in str(refused.value)


def test_a_publish_over_the_warehouse_itself_is_refused_before_it_writes(tmp_path: Path) -> None:
    """A Dagster run config can name any path: the publish itself refuses the writer's own file."""
    warehouse = tmp_path / "wh.duckdb"
    with writing(warehouse, "a test", 0) as con:
        con.execute("CREATE TABLE kept AS SELECT 1 AS one")
        with pytest.raises(PublishError, match="is the warehouse itself"):
            publish(con, PublishTarget(warehouse), "over")

    assert query(warehouse, "SELECT one FROM kept") == [(1,)]


def test_the_copy_is_on_the_disk_before_it_replaces_the_readers_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written, flushed, renamed: a crash never leaves the readers an unflushed copy under their file's
    name. The order is watched at the operating system's calls the publish makes."""
    warehouse, target = tmp_path / "wh.duckdb", PublishTarget(tmp_path / "readers.duckdb")
    calls: list[str] = []
    flush, replace = os.fsync, os.replace

    def flushed(fd: int) -> None:
        calls.append(f"fsync {Path(f'/proc/self/fd/{fd}').readlink().name}")
        flush(fd)

    def replaced(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
        calls.append(f"replace {Path(source).name} -> {Path(destination).name}")
        replace(source, destination)

    monkeypatch.setattr(os, "fsync", flushed)
    monkeypatch.setattr(os, "replace", replaced)
    with writing(warehouse, "a test", 0) as con:
        con.execute("CREATE TABLE kept AS SELECT 1 AS one")
        publish(con, target, "flushed")

    temporary = f".readers.duckdb.tmp-{os.getpid()}"
    mine = [call for call in calls if temporary in call]
    assert mine == [f"fsync {temporary}", f"replace {temporary} -> readers.duckdb"]
    assert query(target.path, "SELECT one FROM kept") == [(1,)]


def test_a_reader_on_the_writers_file_is_told_in_one_line_to_open_the_copy(tmp_path: Path) -> None:
    # Before: DuckDB's own error, whose hint ("open this database in read-only mode") is what the reader did.
    warehouse = tmp_path / "warehouse.duckdb"
    writing(warehouse, "setup", 0).__enter__().close()
    holder = (
        "import sys, time; from pathlib import Path; from warehouse.commit import writing; "
        "w = writing(Path(sys.argv[1]), 'hr apply of plan 1234', 5); w.__enter__(); "
        "print('held', flush=True); time.sleep(30)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder, str(warehouse)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        result = CliRunner().invoke(app, ["sql", "SELECT 1", "--copy", str(warehouse)])
    finally:
        process.kill()
        process.wait()
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {warehouse} is being written by hr apply of plan 1234 (pid ")
    assert f"readers open the copy published for them, {tmp_path / 'warehouse.analytics.duckdb'}" in line
