"""Who a Dagster run acts for, from what Dagster itself recorded (its sensor's or schedule's tick in the
instance's storage), never from a tag a launcher types; four eyes refuse applying a plan its planner made.
Real Dagster instances, real HTTP against the emulator, a real warehouse."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
from dagster._core.definitions.run_request import InstigatorType
from dagster._core.scheduler.instigation import TickData, TickStatus

from emulator.server import EmulatorServer
from pipelines.clients import AdmClientResource
from pipelines.hr.dagster import HrSyncConfig
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import os_user, stored_plan
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_support import hr_sync, row_of, step_failure, user_rows, write_users, writes

pytest_plugins = ["tests.test_hr_support"]

TYPED = {"user": "bob", "dagster/sensor_name": "hr_drop_folder"}
"""Tags anyone may type in the launchpad."""


def rename_file(folder: Path) -> Path:
    """A users export renaming one employee (a change no threshold watches)."""
    rows = user_rows()
    row_of(rows, "E100015")["last_name"] = "Lindgren"
    return write_users(folder / "u.csv", rows)


def run(
    instance: dg.DagsterInstance,
    adm: AdmClientResource,
    store: WarehouseResource,
    folder: Path,
    tags: dict[str, str],
    four_eyes: bool = False,
) -> dg.ExecuteInProcessResult:
    """``hr_sync`` of `rename_file` in process with ``tags``."""
    config = HrSyncConfig(files=[str(rename_file(folder))], errors_dir=str(folder))
    return hr_sync.execute_in_process(
        run_config=dg.RunConfig(ops={"hr_plan": config}),
        resources={
            "adm": adm,
            "warehouse": store,
            "hr_policy": HrPolicyResource(SyncSettings(hr_four_eyes=four_eyes)),
        },
        instance=instance,
        tags=tags,
        raise_on_error=False,
    )


def tick(instance: dg.DagsterInstance, name: str, status: TickStatus, run_ids: list[str]) -> str:
    """A tick of sensor ``name`` that launched ``run_ids``, as the daemon records it in the instance's
    storage; its id."""
    data = TickData("origin", name, InstigatorType.SENSOR, status, time.time(), run_ids)
    return str(instance.create_tick(data).tick_id)


def actors(store: WarehouseResource, result: dg.ExecuteInProcessResult) -> tuple[str | None, str | None]:
    """(planned_by, applied_by) of the run's plan."""
    plan = stored_plan(store, str(result.output_for_node("hr_plan", "plan_id")))
    return plan.planned_by, plan.applied_by


def test_tags_a_launcher_types_do_not_name_the_actor(
    adm: AdmClientResource, hr_store: WarehouseResource, tmp_path: Path
) -> None:
    with dg.instance_for_test() as instance:
        done = tick(instance, "hr_drop_folder", TickStatus.SUCCESS, ["another-run"])  # real, not this run's
        result = run(instance, adm, hr_store, tmp_path, TYPED | {"dagster/tick": done})
    assert result.success
    assert actors(hr_store, result) == (os_user(), os_user())


def test_a_run_its_sensors_tick_launched_acts_for_that_sensor(
    adm: AdmClientResource, hr_store: WarehouseResource, tmp_path: Path
) -> None:
    with dg.instance_for_test() as instance:
        running = tick(instance, "hr_drop_folder", TickStatus.STARTED, [])
        result = run(instance, adm, hr_store, tmp_path, TYPED | {"dagster/tick": running})
    assert result.success
    assert actors(hr_store, result) == ("sensor hr_drop_folder", "sensor hr_drop_folder")


def test_four_eyes_refuse_a_run_applying_the_plan_it_made(
    adm: AdmClientResource, hr_store: WarehouseResource, tmp_path: Path, server: EmulatorServer
) -> None:
    with dg.instance_for_test() as instance:
        result = run(instance, adm, hr_store, tmp_path, {}, four_eyes=True)
    assert not result.success
    step, description = step_failure(result)
    assert step == "hr_apply"
    assert description == f"ADM_HR_FOUR_EYES: {os_user()} made this plan, so another person must apply it"
    assert writes(server) == {}
