"""No crash point is unrecoverable, and every failure is recorded as what it was (issue 18).

A process killed (SIGKILL) in the middle of writing the warehouse leaves DuckDB's write-ahead log; the next
open replays it. These tests kill real processes at the worst moments and open what they left, with no
network (this machine has none: an open that tried to download an extension would fail).
"""

from __future__ import annotations

import grp
import os
import random
import resource
import signal
import string
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings
from resources.errors import AuthenticationError
from tests.conftest import copy_of
from tests.standin import Quirks, StandIn
from tests.sync_support import (
    STANDIN_TENANT_ID,
    STANDIN_TOKEN,
    in_memory_instance,
    stale_digests,
    sync_standin,
)
from tests.test_sync_quirks import T, decision, delegation, tenant, ts, uid, user
from warehouse.commit import connect
from warehouse.migrate import available
from warehouse.publish import readable_as
from warehouse.runs import last_success

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("authority-sync")
FIRST_RELEASE = 3
"""The last migration of the first release's warehouse (current tables, history, the first views)."""

DIE_IN_COMMIT = """
import os, signal, sys
from warehouse.db import open_database
from warehouse.migrate import migrate
# Checkpoints off: every migration stays in the write-ahead log, as when a commit is killed before DuckDB
# checkpoints at COMMIT; then the process is killed, as kill -9 would.
settings = {"checkpoint_threshold": "1TB", "storage_compatibility_version": "v1.4.0"}
con = open_database(sys.argv[1], config=settings)
migrate(con)
os.kill(os.getpid(), signal.SIGKILL)
"""


def die_while_migrating(path: Path) -> None:
    """Migrate ``path`` in a process killed before anything is checkpointed."""
    died = subprocess.run([sys.executable, "-c", DIE_IN_COMMIT, str(path)], cwd=ROOT, check=False)
    assert died.returncode == -signal.SIGKILL
    assert path.with_name(path.name + ".wal").stat().st_size > 0


def first_release_warehouse(path: Path, storage: str = "v1.4.0") -> None:
    """A warehouse as the first release built it (in ``storage``, DuckDB's newest by default then), closed
    cleanly."""
    with duckdb.connect(str(path), config={"storage_compatibility_version": storage}) as con:
        con.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for version, name, sql in available():
            if version <= FIRST_RELEASE:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])


def test_a_new_warehouse_killed_in_its_first_commit_opens_offline(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    die_while_migrating(warehouse)

    with connect(warehouse) as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (available()[-1][0],)
        assert con.execute("SELECT count(*) FROM users").fetchone() == (0,)


def test_an_upgrade_killed_half_way_opens_offline(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    first_release_warehouse(warehouse)
    die_while_migrating(warehouse)

    with connect(warehouse) as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (available()[-1][0],)


def limited_file_size(limit: int) -> None:
    """In the child: no file may grow past ``limit`` bytes (a full disk, as far as the writer can tell)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def test_a_commit_that_fails_on_a_full_disk_is_recorded_failed_and_not_fresh(
    tmp_path: Path, template: Path
) -> None:
    # Forty decisions of 10 KB of text each: no staged file reaches the limit, the commit's log does.
    text = string.ascii_letters + string.digits
    rng = random.Random(7)
    decisions = [decision(n, description="".join(rng.choice(text) for _ in range(10_000))) for n in range(40)]
    warehouse = copy_of(template, tmp_path / "warehouse.duckdb")  # migrated: the commit is the subject
    env = {
        "PATH": os.environ["PATH"],
        "ADM_TOKEN": STANDIN_TOKEN,
        "ADM_TENANTS": STANDIN_TENANT_ID,
        "ADM_WAREHOUSE": str(warehouse),
        "ADM_RATE_PER_MINUTE": "60000",
    }
    with StandIn(tenant(decisions=decisions)) as standin:
        failed = subprocess.run(
            [str(CLI), "extract", "--full-refresh"],
            env={**env, "ADM_BASE_URL": standin.base_url},
            preexec_fn=lambda: limited_file_size(1_200_000),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert failed.returncode == 1, failed.stdout + failed.stderr
    # One line names the tenant and the cause, whatever the paths' length: rich wrapped it at 80 columns
    # without a terminal, and in a worker with a longer temporary path "File too large" was split.
    said = [line for line in failed.stdout.splitlines() if "failed, nothing committed" in line]
    assert len(said) == 1 and "File too large" in said[0], failed.stdout
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM decisions").fetchone() == (0,)
        status, error = con.execute("SELECT status, error FROM sync_runs").fetchone() or (None, None)
    # Before: "succeeded", with row counts that never landed, and the freshness check passed on it.
    assert status == "failed" and "File too large" in (error or "")
    assert last_success(warehouse, STANDIN_TENANT_ID) is None


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_what_a_sync_writes_is_private_and_the_copy_can_be_shared_with_readers(tmp_path: Path) -> None:
    # Before: the warehouse, the copy, staging and reports followed the umask (0644 under 0022).
    os.umask(0o022)
    warehouse, shared = tmp_path / "private" / "warehouse.duckdb", tmp_path / "shared" / "warehouse.duckdb"
    group = grp.getgrgid(os.getgid()).gr_name
    with StandIn(tenant(decisions=[decision(1)])) as standin:
        sync_standin(standin, warehouse)
        sync_standin(standin, shared, readers_group=group, publish_parquet=True)

    assert mode(warehouse) == 0o600 and mode(warehouse.parent) == 0o700
    assert mode(warehouse.with_name("warehouse.analytics.duckdb")) == 0o600
    assert mode(warehouse.parent / "staging") == 0o700
    copy = shared.with_name("warehouse.analytics.duckdb")
    assert mode(shared) == 0o600
    assert (mode(copy), copy.stat().st_gid) == (0o640, os.getgid())
    parquet = sorted(p for p in shared.parent.glob("warehouse.analytics-parquet/*/*") if p.is_file())
    assert parquet and {mode(p) for p in parquet} == {0o640}


def test_a_killed_cli_run_is_marked_killed_with_its_calls_and_its_dagster_run_failed(tmp_path: Path) -> None:
    # Before: no sync_runs row at all (its calls vanished from the budget), and the Dagster run of the
    # killed CLI process stayed STARTED forever.
    warehouse, home = tmp_path / "warehouse.duckdb", tmp_path / "dagster_home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "DAGSTER_HOME": str(home),
        "ADM_TOKEN": STANDIN_TOKEN,
        "ADM_TENANTS": STANDIN_TENANT_ID,
        "ADM_WAREHOUSE": str(warehouse),
        "ADM_RATE_PER_MINUTE": "60000",
        "ADM_CONCURRENCY": "1",
    }
    served = tenant(delegations=[delegation(n) for n in range(60)])
    with StandIn(served, Quirks(latency_s=0.1)) as standin:
        env["ADM_BASE_URL"] = standin.base_url
        killed = subprocess.Popen([str(CLI), "extract"], env=env, cwd=tmp_path)
        # A report written, not only its file created: a kill between the two leaves an empty file, and a
        # run killed before its first request left rightly counts none.
        progress = _await(
            lambda: next((p for p in tmp_path.glob("staging/*/*/progress.json") if p.read_text()), None)
        )
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(timeout=30) == -signal.SIGKILL
        standin.quirks.latency_s = 0.0
        # The next run, in this process on the same Dagster instance: what it finds is the subject, not how
        # it is launched (a second CLI process cost a Dagster start, 4 s of CPU).
        with dg.DagsterInstance.from_config(str(home)) as instance:
            again = run_tenant(
                sync_definitions(standin_settings(standin, warehouse)), STANDIN_TENANT_ID, instance
            )
            run = instance.get_run_by_id(first := progress.parent.parent.name)

    assert again.success, again.error
    with duckdb.connect(str(warehouse), read_only=True) as con:
        status, calls, error = con.execute(
            "SELECT status, api_calls_total, error FROM sync_runs WHERE run_id = ?", [first]
        ).fetchone() or (None, 0, None)
        statuses = con.execute("SELECT status FROM sync_runs ORDER BY started_at").fetchall()
    assert status == "killed" and calls > 0, (status, calls)
    assert f"killed: process {killed.pid}" in (error or "")
    assert statuses == [("killed",), ("succeeded",)]
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE


def _await(found: Callable[[], Path | None], timeout: float = 90.0) -> Path:
    deadline = time.monotonic() + timeout
    while (path := found()) is None:
        assert time.monotonic() < deadline, "the run never reported its progress"
        time.sleep(0.1)
    return path


def test_a_failed_cli_run_says_it_in_one_line_first_and_dagster_only_when_asked(tmp_path: Path) -> None:
    # Before: about 200 lines of Dagster's output (stack traces) before the one line.
    env = {
        "PATH": os.environ["PATH"],
        "ADM_TOKEN": "a-token-the-service-refuses",
        "ADM_TENANTS": STANDIN_TENANT_ID,
        "ADM_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
        "COLUMNS": "200",
    }
    with StandIn(tenant(decisions=[decision(1)])) as standin:
        env["ADM_BASE_URL"] = standin.base_url
        quiet = subprocess.run([str(CLI), "extract"], env=env, capture_output=True, text=True, check=False)
        verbose = subprocess.run(
            [str(CLI), "--verbose", "extract"], env=env, capture_output=True, text=True, check=False
        )

    assert quiet.returncode == verbose.returncode == 1
    first = quiet.stdout.splitlines()[0]
    assert first.startswith(f"tenant {STANDIN_TENANT_ID} failed, nothing committed: ")
    assert "401" in first and quiet.stderr == ""
    # No DAGSTER_HOME: the run is not a Dagster job, and --verbose shows the run's log with the stack trace.
    assert "Traceback" in verbose.stderr and "a-token-the-service-refuses" not in verbose.stderr


FILL_STAGING = """
import resource, signal, sys
from pathlib import Path
from warehouse.staging import StagingWriter, StagingError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
row = {"tenant_id": "t", "parent_kind": "document", "outcome": "listed", "revisions": 1}
try:
    with StagingWriter(Path(sys.argv[1])) as writer:
        for n in range(20_000):
            writer.add({"revision_checks": [{**row, "parent_id": f"{n}" * 40}]})
except StagingError as error:
    print(error)
"""


FILL_STAGING_FROM_THE_WAREHOUSE = """
import resource, signal, sys
from pathlib import Path
import pyarrow as pa
from warehouse.schema import staging_schema
from warehouse.staging import StagingWriter, StagingError, append_staged
folder = Path(sys.argv[1])
with StagingWriter(folder) as writer:
    writer.declare("revision_checks")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
schema = staging_schema("revision_checks")
rows = [{"tenant_id": "t", "parent_kind": "document", "parent_id": f"{n}" * 40, "outcome": "listed",
         "revisions": 1} for n in range(20_000)]
try:
    append_staged(folder, "revision_checks", [pa.RecordBatch.from_pylist(rows, schema)])
except StagingError as error:
    print(error)
"""
"""The stored rows of records read unchanged, appended to a staged file (`warehouse.unchanged`)."""


@pytest.mark.parametrize("script", [FILL_STAGING, FILL_STAGING_FROM_THE_WAREHOUSE], ids=["read", "stored"])
def test_a_full_staging_disk_names_the_folder(tmp_path: Path, script: str) -> None:
    folder = tmp_path / "staging" / "run" / STANDIN_TENANT_ID
    child = subprocess.run(
        [sys.executable, "-c", script, str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"could not write revision_checks to the staging folder {folder}" in child.stdout, child.stderr


def first_release_copy_of(synced: Path, target: Path, *more: str) -> None:
    """``target``: the first release's warehouse (its schema, DuckDB's newest storage, hashes of another
    definition) holding what a current sync put in ``synced`` (and in the tables ``more``)."""
    first_release_warehouse(target, storage="latest")
    with duckdb.connect(str(target)) as con:
        con.execute("ATTACH ? AS synced (READ_ONLY)", [str(synced)])
        copied = (
            "users",
            "user_groups",
            "decisions",
            "decisions_history",
            "users_history",
            "sync_runs",
            *more,
        )
        for table in copied:
            columns = [row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()]
            names = ", ".join(columns)
            con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM synced.{table}")  # noqa: S608
        con.execute("UPDATE users SET content_hash = 'old-' || id")
        con.execute("UPDATE users_history SET content_hash = 'old-' || id")


def counts(path: Path, *tables: str) -> dict[str, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        found = {table: con.execute(f"SELECT count(*) FROM {table}").fetchone() for table in tables}  # noqa: S608
    return {table: row[0] if row else 0 for table, row in found.items()}


def test_a_first_release_warehouse_upgrades_in_place_keeping_everything(
    tmp_path: Path, template: Path
) -> None:
    # Before: no upgrade command; the upgraded file stayed in 2.0 storage (slow publishes), 291 of 300 users
    # had no primary group until a full refresh, which then added a version of every record.
    groups = [{"groupId": uid("group", n), "groupName": f"G{n}"} for n in (3, 1, 2)]

    def memberships(n: int) -> list[dict[str, str]]:  # the first release keyed them by id: one id each
        return [{**group, "id": f"m{n}-{at}"} for at, group in enumerate(groups[n % 3 :])]

    served = tenant(users=[user(n, userGroups=memberships(n)) for n in range(1, 8)], decisions=[decision(1)])
    current = copy_of(template, tmp_path / "current.duckdb")  # a current warehouse: not the subject
    old = tmp_path / "old" / "warehouse.duckdb"
    old.parent.mkdir()
    with StandIn(served) as standin:
        sync_standin(standin, current)
        first_release_copy_of(current, old)
        assert not readable_as(old, "v1.4.0")
        before = counts(old, "users_history", "decisions_history", "sync_runs")

        result = CliRunner().invoke(app, ["warehouse", "upgrade", "--warehouse", str(old)])
        assert result.exit_code == 0, result.output
        said = "the child rows of 8 records put in the service's order, rewritten in storage v1.4.0"
        assert "content hashes computed again, " + said in result.output
        with duckdb.connect(str(old), read_only=True) as con:
            assert stale_digests(con) == {}  # hashes computed again, children rewritten: digests with them
        again = sync_standin(standin, old)

    assert readable_as(old, "v1.4.0") and old.with_name("warehouse.duckdb.before-upgrade").is_file()
    after = counts(old, "users_history", "decisions_history", "sync_runs")
    assert after == {**before, "sync_runs": before["sync_runs"] + 1}
    with duckdb.connect(str(old), read_only=True) as con:
        primaries = con.execute(
            "SELECT ug.user_id, ug.group_id FROM user_groups ug WHERE ug.is_primary ORDER BY 1"
        ).fetchall()
    assert primaries == sorted((uid("user", n), groups[n % 3]["groupId"]) for n in range(1, 8))
    # The full refresh after the upgrade found nothing changed: no version of any record was added.
    assert again.record.row_counts["users"]["updated"] == 0


def test_after_an_upgrade_the_next_sync_reports_no_child_row_changed(tmp_path: Path, template: Path) -> None:
    # Before: migration 0013 numbered each user's roles by id order, the service lists them otherwise, and the
    # first sync after the upgrade reported every reordered role "updated" with nothing changed.
    def roles(n: int) -> list[dict[str, object]]:  # listed in the reverse of their ids' order
        return [
            {
                "id": f"role-{n}-{at}",
                "tenantId": T,
                "tenantRoleId": uid("role", at),
                "roleName": f"Role {at}",
                "autoProvisioned": False,
                "instanceId": None,
                "createdOn": ts(at),
                "deletedOn": None,
                "updatedOn": ts(at),
            }
            for at in (3, 2, 1)
        ]

    served = tenant(users=[user(n, userRoles=roles(n)) for n in range(1, 6)])
    current = copy_of(template, tmp_path / "current.duckdb")  # a current warehouse: not the subject
    old = tmp_path / "old" / "warehouse.duckdb"
    old.parent.mkdir()
    with StandIn(served) as standin:
        sync_standin(standin, current)
        first_release_copy_of(current, old, "user_roles")
        result = CliRunner().invoke(app, ["warehouse", "upgrade", "--warehouse", str(old)])
        assert result.exit_code == 0, result.output
        assert "the child rows of 5 records put in the service's order" in result.output
        again = sync_standin(standin, old)

    assert again.record.row_counts["user_roles"] == {
        "inserted": 0,
        "updated": 0,
        "unchanged": 15,
        "deleted": 0,
    }
    with duckdb.connect(str(old), read_only=True) as con:
        listed = con.execute(
            "SELECT id FROM user_roles WHERE user_id = ? ORDER BY item_order", [uid("user", 1)]
        )
        assert [row[0] for row in listed.fetchall()] == ["role-1-3", "role-1-2", "role-1-1"]


def test_a_rerun_after_a_failure_late_in_the_extract_asks_only_for_what_is_missing(tmp_path: Path) -> None:
    # Before: a failed or killed run threw away what it staged; the rerun read the whole tenant again.
    warehouse = tmp_path / "warehouse.duckdb"
    served = tenant(delegations=[delegation(n) for n in range(50)])
    with StandIn(served, Quirks(revisions_answered=40)) as failing, pytest.raises(AuthenticationError):
        sync_standin(failing, warehouse)
    journal = tmp_path / "staging" / f"resume-{STANDIN_TENANT_ID}" / "delegation-revisions.jsonl"
    fetched = len(journal.read_text(encoding="utf-8").splitlines())
    assert 40 - 8 <= fetched <= 40  # answers still in flight when the run stopped were not kept

    with StandIn(served) as healthy:
        outcome = sync_standin(healthy, warehouse)

    assert outcome.record.status == "succeeded"
    assert healthy.requests["revisions of delegations"] == 50 - fetched
    assert healthy.requests["delegations"] == failing.requests["delegations"]  # the list is read again
    assert rows_of(warehouse, "SELECT count(DISTINCT delegation_id) FROM delegation_revisions") == 50
    assert not journal.parent.exists()  # a commit forgets what was kept for resuming


def rows_of(path: Path, sql: str) -> Any:
    with duckdb.connect(str(path), read_only=True) as con:
        found = con.execute(sql).fetchone()
    return found[0] if found else None


def test_a_dagster_step_failed_by_an_outage_runs_again_and_reuses_what_it_fetched(tmp_path: Path) -> None:
    # Before: at 30% injected 5xx a run failed about 78% of the time and nothing retried it.
    served = tenant(delegations=[delegation(n) for n in range(30)])
    with StandIn(served, Quirks(outage=(20, 5))) as standin:  # E11 number 21 fails all 5 tries
        settings = standin_settings(
            standin, tmp_path / "warehouse.duckdb", concurrency=1, max_retries=2, retry_wait_s=0.1
        )
        with in_memory_instance() as instance:
            run = run_tenant(sync_definitions(settings), STANDIN_TENANT_ID, instance)

    assert run.success, run.error
    # 20 answered, 5 failed tries of the 21st; the retry asks only for the 10 not answered yet.
    assert standin.requests["revisions of delegations"] == 30
    statuses = rows_of_all(tmp_path / "warehouse.duckdb", "SELECT run_id, status FROM sync_runs ORDER BY 1")
    assert statuses == [(run.run_id, "failed"), (f"{run.run_id}.1", "succeeded")]


def standin_settings(standin: StandIn, warehouse: Path, **changes: Any) -> SyncSettings:
    """Settings of a sync of the stand-in's tenant into ``warehouse`` at no rate limit, ``changes`` on top."""
    return SyncSettings(
        base_url=standin.base_url,
        token=STANDIN_TOKEN,
        tenants=[STANDIN_TENANT_ID],
        warehouse=warehouse,
        rate_per_minute=60_000,
        **changes,
    )


def rows_of_all(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()
