"""Runs that Dagster's daemon launches carry their tenant's tags: a schedule's tick, the HR drop-folder
sensor's tick, an asset backfill. Each goes through the daemon's own iteration (what ``dagster-daemon``
runs every few seconds) on a real instance with the project's instance settings, over a code location
loaded in this process from the test's environment. The runs are queued, not run: what is tested is what
the run queue and the runs list see (a tenant id and name in the tags)."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import create_test_daemon_workspace_context, freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._scheduler.scheduler import launch_scheduled_runs

from emulator.server import EmulatorServer
from pipelines.assets import table_key
from pipelines.hr.mapping import SAMPLES
from pipelines.tenant_runs import NIGHTLY_JOB
from pipelines.tenant_tags import TENANT_NAME_TAG, TENANT_TAG
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID
from tests.dagster_support import new_dagster_home
from tests.sync_support import ROOT, sync_env

LOG = logging.getLogger(__name__)
NAMED = {(DEMO_TENANT_ID, "acme"), (OTHER_TENANT_ID, "globex")}
"""Both tenants, by id and name (``ADM_TENANTS=acme=<id>,globex=<id>``)."""


@pytest.fixture
def daemon(
    small_emulator_server: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkspaceProcessContext]:
    """The daemon's view of the code location (both tenants named, a drop folder) and of an instance with
    the project's run queue, in a temporary folder."""
    tenants = f"acme={DEMO_TENANT_ID},globex={OTHER_TENANT_ID}"
    drop = tmp_path / "drop"
    drop.mkdir()
    env = sync_env(small_emulator_server, tmp_path / "warehouse.duckdb", ADM_TENANTS=tenants)
    for name, value in (env | {"ADM_HR_DROP_DIR": str(drop)}).items():
        monkeypatch.setenv(name, value)
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(
            module_name="tests.dagster_support",
            attribute="location_from_environment",
            working_directory=str(ROOT),
        ),
        location_name="authority_sync",
    )
    with (
        dg.DagsterInstance.from_config(str(new_dagster_home(tmp_path))) as instance,
        create_test_daemon_workspace_context(InProcessWorkspaceLoadTarget(origin), instance) as context,
    ):
        yield context


def queued(instance: dg.DagsterInstance, job: str) -> set[tuple[str, str]]:
    """(tenant id, tenant name) of the job's queued runs, as the run queue's tag limits read them; every
    one of them is also found by the runs list's tag filter on both tags."""
    runs = instance.get_runs(dg.RunsFilter(job_name=job))
    assert runs and {run.status for run in runs} == {dg.DagsterRunStatus.QUEUED}
    tagged = {(run.tags.get(TENANT_TAG, ""), run.tags.get(TENANT_NAME_TAG, "")) for run in runs}
    for tenant, name in tagged:
        found = instance.get_runs(
            dg.RunsFilter(job_name=job, tags={TENANT_TAG: tenant, TENANT_NAME_TAG: name})
        )
        assert found
    return tagged


def test_a_schedule_tick_queues_each_tenants_run_with_its_tenants_tags(
    daemon: WorkspaceProcessContext,
) -> None:
    """The nightly schedule (running by default with a service configured) ticks once a day; its runs are
    requested by partition alone (`pipelines.jobs.sync_schedules`)."""
    now = datetime.now(UTC)
    # The first iteration starts counting the schedule's ticks; the next, a day later, passes one.
    for moment in (now, now + timedelta(days=1, minutes=1)):
        with freeze_time(moment):
            list(launch_scheduled_runs(daemon, LOG, moment, {}))

    assert queued(daemon.instance, NIGHTLY_JOB) == NAMED


def test_a_drop_folder_sensor_tick_queues_the_hr_run_with_its_tenants_tags(
    daemon: WorkspaceProcessContext, tmp_path: Path
) -> None:
    """A file dropped for a named tenant: the run the sensor requests carries the tenant's id and name
    (before: only the id, and the runs list's tenant-name filter missed HR runs)."""
    shutil.copy(SAMPLES / "demo_users.csv", tmp_path / "drop" / "users.csv")
    (tmp_path / "drop" / "hr-folder.toml").write_text('tenant_id = "globex"\n')
    instance = daemon.instance
    location = next(iter(daemon.create_request_context().get_code_location_entries().values()))
    assert location.code_location is not None, location.load_error
    repository = next(iter(location.code_location.get_repositories().values()))
    instance.start_sensor(repository.get_sensor("hr_drop_folder"))
    start = time.time()
    # A file is taken once it is unchanged between two ticks, 30 s apart at the least.
    for moment in (start, start + 31):
        with freeze_time(moment):
            list(execute_sensor_iteration(daemon, LOG, None, None))

    assert queued(instance, "hr_sync") == {(OTHER_TENANT_ID, "globex")}


def test_an_asset_backfill_queues_each_partitions_run_with_its_tenants_tags(
    daemon: WorkspaceProcessContext,
) -> None:
    """The asset catalog's "Materialize" of both partitions: Dagster's implicit asset job, whose partitions
    carry no tags, runs each; the run queue gives it the tenant sync's (`pipelines.run_queue`)."""
    instance = daemon.instance
    request = daemon.create_request_context()
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="tenants",
        asset_graph=request.asset_graph,
        partition_names=[DEMO_TENANT_ID, OTHER_TENANT_ID],
        asset_selection=[table_key("users")],
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)

    list(execute_backfill_iteration(daemon, LOG))

    assert queued(instance, "__ASSET_JOB") == NAMED
