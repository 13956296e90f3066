"""The tenant sync under Dagster's launch paths that run it in processes of their own, on real instances
against the real emulator: re-execution from failure under the default (multi-process) executor, and
``dagster job execute``. (A file of their own: each test starts Dagster processes, and the suite's
workers take a file each, so these run beside the in-process tests of tests/test_pipeline_dagster.py.)"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from emulator.server import EmulatorServer
from emulator.service import Emulator
from pipelines.assets import TABLES, table_key
from pipelines.runner import QUIET_LOGS
from pipelines.settings import SyncSettings
from pipelines.tenant_tags import TENANT_NAME_TAG, TENANT_TAG
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, fresh
from tests.dagster_support import (
    PARTITION,
    events,
    materialized,
    new_dagster_home,
    nightly_sync_job,
    synced_then_deleted_at_the_plan,
    tenant_rows,
    too_many_requests,
)
from tests.sync_support import dagster_cli, query, settings_for, sync_env
from warehouse.locks import held, writer_lock_path


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh (these tests are about launch paths, not volume)."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def warehouse(migrated: Path) -> Path:
    """A new warehouse (a copy of the migrated template: these tests are not about migrating)."""
    return migrated


@pytest.fixture
def settings(server: EmulatorServer, warehouse: Path) -> SyncSettings:
    """Settings of a new warehouse, pointed at the session emulator."""
    return settings_for(server, warehouse)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """A persistent Dagster instance in a temporary folder."""
    with dg.instance_for_test() as temporary:
        yield temporary


CLI_S = 420
"""Bound on one `dagster` command's sync (a minute idle; past 180 s on a loaded 2-core machine)."""
NAMED = f"acme={DEMO_TENANT_ID},{OTHER_TENANT_ID}"
"""``ADM_TENANTS``: both tenants, the demo tenant named."""


@pytest.fixture
def sync_environment(server: EmulatorServer, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ADM_*`` variables of both tenants, for code that reads the environment (and what it starts)."""
    for name, value in sync_env(server, warehouse, ADM_LOCK_WAIT_S="1", ADM_TENANTS=NAMED).items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def dagster_home(tmp_path: Path) -> Path:
    """A Dagster instance folder with the project's instance settings (run concurrency per tenant)."""
    return new_dagster_home(tmp_path)


@pytest.mark.usefixtures("sync_environment")
def test_reexecution_from_failure_after_a_failed_commit_commits_the_whole_sync(
    emulator: Emulator, warehouse: Path, instance: dg.DagsterInstance
) -> None:
    """The first run cannot commit (another writer holds the warehouse); "re-execute from failure" reruns
    the whole tenant sync in the default executor's process and commits everything, never an empty run."""
    job = dg.reconstructable(nightly_sync_job)
    with held(writer_lock_path(warehouse), "an analyst's export", 0, "the warehouse"):
        failed = dg.execute_job(job, instance, tags=PARTITION, run_config=QUIET_LOGS)
    assert not failed.success
    assert materialized(instance, failed.run_id) == {}
    failure = events(instance, failed.run_id, dg.DagsterEventType.STEP_FAILURE)[0].step_failure_data
    assert "this run did nothing" not in str(failure.error)
    # The headline of the step's failure and of the run's is the product's one-line cause (not Dagster's
    # "Error occurred while executing op"); its stack trace follows as the cause.
    assert failure.user_failure_data is not None
    cause = failure.user_failure_data.description or ""
    assert cause.startswith("LockBusyError: the warehouse") and "held by an analyst's export" in cause
    run_failure = events(instance, failed.run_id, dg.DagsterEventType.RUN_FAILURE)[0].job_failure_data
    for error in (failure.error, run_failure.error):
        assert error is not None and error.message.splitlines()[0].endswith(f"Failure: {cause}")
        assert error.cause is not None and "in _acquire" in "".join(error.cause.stack)
    # The UI's re-execution copies the parent's tags; Dagster's Python API takes them as given.
    options = dg.ReexecutionOptions.from_failure(failed.run_id, instance)
    again = dg.execute_job(job, instance, tags=PARTITION, reexecution_options=options, run_config=QUIET_LOGS)

    assert again.success
    # Both carry their tenant's tags, although only the partition was given: the runs list finds them.
    found = instance.get_runs(dg.RunsFilter(tags={TENANT_TAG: DEMO_TENANT_ID, TENANT_NAME_TAG: "acme"}))
    assert {run.run_id for run in found} == {failed.run_id, again.run_id}
    state = emulator.tenants[DEMO_TENANT_ID]
    assert tenant_rows(warehouse, "decisions") == len(state.decisions)
    assert tenant_rows(warehouse, "users") == len(state.users)
    runs = query(warehouse, "SELECT run_id, status, api_calls_total, phase_seconds FROM sync_runs")
    assert [(run_id, status) for run_id, status, _, _ in runs] == [(again.run_id, "succeeded")]
    assert runs[0][2] > 0
    phases = json.loads(runs[0][3])
    assert set(phases) == {"extract", "checks", "commit", "publish"} and phases["commit"] > 0
    tables = materialized(instance, again.run_id)
    assert {table_key(table).to_user_string() for table in TABLES} <= set(tables)
    assert tables["adm/users_history"]["dagster/row_count"] >= len(state.users)
    assert {"adm/v_user_authorities", "adm/analytics_copy"} <= set(tables)
    assert tables["adm/analytics_copy"]["published"].endswith(".analytics.duckdb")
    assert tables["adm/users"]["dagster/row_count"] == len(state.users)
    assert tables["adm/decisions"]["partition"] == DEMO_TENANT_ID


def test_dagster_job_execute_runs_full_refresh_fully_without_a_429(
    server: EmulatorServer, settings: SyncSettings, dagster_home: Path
) -> None:
    """`dagster job execute` with no run config: the job's tag makes it full, deletions are found, and the
    default (multi-process) executor keeps to the plan's rate."""
    deleted, env = synced_then_deleted_at_the_plan(server, settings, dagster_home)
    env["ADM_TENANTS"] = NAMED

    tags = f'{{"dagster/partition": "{DEMO_TENANT_ID}"}}'
    result = dagster_cli(
        "job",
        "execute",
        "-m",
        "pipelines.definitions",
        "-j",
        "full_refresh",
        "--tags",
        tags,
        env=env,
        timeout=CLI_S,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert tenants_of_runs(dagster_home) == [("full_refresh", DEMO_TENANT_ID, "acme")]
    last = query(
        settings.warehouse, "SELECT mode, status, rate_limited_429 FROM sync_runs ORDER BY started_at"
    )[-1]
    assert last == ("full", "succeeded", 0)
    marked = query(settings.warehouse, "SELECT id FROM decisions WHERE is_deleted AND deleted_at > synced_at")
    assert {row[0] for row in marked} == deleted
    assert too_many_requests(server) == 0


def test_dagster_asset_materialize_of_a_partition_tags_the_run_with_its_tenant(
    server: EmulatorServer, settings: SyncSettings, dagster_home: Path
) -> None:
    """`dagster asset materialize --partition`: Dagster's implicit asset job, whose partitions carry no
    tags, gets its tenant's from the step (before: only ``dagster/partition``, and the runs list's tenant
    filter missed it)."""
    env = (
        os.environ
        | sync_env(server, settings.warehouse, ADM_TENANTS=NAMED)
        | {"DAGSTER_HOME": str(dagster_home)}
    )

    result = dagster_cli(
        "asset",
        "materialize",
        "-m",
        "pipelines.definitions",
        "--select",
        "adm/users",
        "--partition",
        DEMO_TENANT_ID,
        env=env,
        timeout=CLI_S,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert tenants_of_runs(dagster_home) == [("__ASSET_JOB", DEMO_TENANT_ID, "acme")]
    assert query(settings.warehouse, "SELECT status FROM sync_runs") == [("succeeded",)]


def tenants_of_runs(dagster_home: Path) -> list[tuple[str, str, str]]:
    """(job, tenant id, tenant name) of each run the runs list finds by both tenant tags."""
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={TENANT_TAG: DEMO_TENANT_ID, TENANT_NAME_TAG: "acme"}))
    return [(run.job_name, run.tags[TENANT_TAG], run.tags[TENANT_NAME_TAG]) for run in runs]
