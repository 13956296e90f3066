"""The ``hr_sync`` job (plan, apply only when allowed or approved) and the drop-folder sensor."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from pydantic import ValidationError

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from pipelines.clients import AdmClientResource
from pipelines.hr.dagster import (
    SHOWN_PROBLEMS,
    HrSyncConfig,
    hr_drop_folder,
    hr_refresh_after_apply,
)
from pipelines.hr.mapping import SAMPLES
from pipelines.hr.policy import HrPolicyResource
from pipelines.tenant_tags import TENANT_TAG
from pipelines.warehouse_resource import WarehouseResource
from tests.dagster_support import new_dagster_home
from tests.sync_support import dagster_cli, query, sync_env
from tests.test_hr_support import (
    demo_files,
    drop_sensor_context,
    faults,
    hr_sync,
    step_failure,
    user_rows,
    write_users,
    writes,
)

pytest_plugins = ["tests.test_hr_support"]

DEMO = [str(path) for path in demo_files()]


def run(
    adm: AdmClientResource,
    store: WarehouseResource,
    config: HrSyncConfig,
    instance: dg.DagsterInstance | None = None,
    *,
    raise_on_error: bool = True,
) -> dg.ExecuteInProcessResult:
    """Run ``hr_sync`` in process with the test's emulator and warehouse."""
    return hr_sync.execute_in_process(
        run_config=dg.RunConfig(ops={"hr_plan": config}),
        resources={"adm": adm, "warehouse": store, "hr_policy": HrPolicyResource()},
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=raise_on_error,
    )


def plan_metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    """The metadata of the plan output."""
    event = next(
        event
        for event in result.all_node_events
        if event.is_successful_output and event.step_output_data.output_name == "plan_id"
    )
    return dict(event.step_output_data.metadata)


def test_a_plan_within_thresholds_is_applied(
    adm: AdmClientResource, hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        result = run(adm, hr_store, HrSyncConfig(files=DEMO, errors_dir=str(tmp_path)), instance)
        assert result.success
        assert result.output_for_node("hr_apply") == "applied"
        metadata = plan_metadata(result)
        assert "| manager | 4 |" in metadata["plan"].value
        # The run shows what the upload rejected and where the error report is, and the whole plan's size.
        assert (metadata["rejected_rows"].value, metadata["problems"].value) == (8, 8)
        reports = {tmp_path / "demo_users.errors.csv", tmp_path / "demo_groups.errors.csv"}
        assert {Path(path) for path in metadata["error_reports"].value} == reports
        assert (metadata["entities"].value, metadata["needs_creation"].value) == (19, 2)
        assert len(writes(server)) == 19
        # The warehouse is refreshed by a run of its own, in the run queue, not inside this one.
        assert refresh_requests(instance) == [(f"hr_refresh:{result.run_id}", DEMO_TENANT_ID)]
        run_tags = instance.get_run_by_id(result.run_id).tags  # type: ignore[union-attr]
        assert run_tags[TENANT_TAG] == DEMO_TENANT_ID  # the run is found by its tenant in the runs list


@pytest.mark.timeout(300)  # a `dagster` process, its fork server and two step processes
def test_dagster_job_execute_runs_hr_sync_in_step_processes_and_applies_the_plan(
    hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    """What the daemon runs for a dropped file, out of process: `dagster job execute` of ``hr_sync``, each
    op in a step process of its own, plans the demo exports and applies them, as the in-process run above
    does. (Which executor makes the step processes, the fork server, is held by
    tests/test_pipeline_definitions.py.)"""
    config = tmp_path / "run.json"
    config.write_text(
        json.dumps({"ops": {"hr_plan": {"config": {"files": DEMO, "errors_dir": str(tmp_path)}}}})
    )
    home = new_dagster_home(tmp_path)
    env = os.environ | sync_env(server, hr_store.file) | {"DAGSTER_HOME": str(home)}

    result = dagster_cli(
        "job", "execute", "-m", "pipelines.definitions", "-j", "hr_sync", "-c", str(config), env=env
    )

    assert result.returncode == 0, result.stderr[-3000:]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run_record,) = instance.get_run_records()
        started = instance.all_logs(
            run_record.dagster_run.run_id, of_type=dg.DagsterEventType.STEP_WORKER_STARTED
        )
    assert run_record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    assert sorted(event.step_key or "" for event in started) == ["hr_apply", "hr_plan"]
    assert query(hr_store.file, "SELECT status FROM hr_plans") == [("applied",)]
    assert len(writes(server)) == 19


def refresh_requests(instance: dg.DagsterInstance) -> list[tuple[str | None, str | None]]:
    """(run key, partition) of the runs the refresh sensor requests now; each names the nightly job."""
    result = hr_refresh_after_apply(dg.build_sensor_context(instance=instance))
    assert isinstance(result, dg.SensorResult)
    return [(request.run_key, request.partition_key) for request in result.run_requests or []]


def test_an_incomplete_apply_fails_the_run_and_a_rerun_resumes_it(
    adm: AdmClientResource, hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    faults(server, error_rate=1.0, methods=["PATCH"])
    with dg.DagsterInstance.ephemeral() as instance:
        failed = run(
            adm, hr_store, HrSyncConfig(files=DEMO, errors_dir=str(tmp_path)), instance, raise_on_error=False
        )
        assert not failed.success
        failure = next(event for event in failed.all_events if event.is_step_failure)
        assert failure.step_key == "hr_apply" and "incomplete" in str(failure.event_specific_data)
        plan_id = failed.output_for_node("hr_plan", "plan_id")
        assert writes(server) == {}
        faults(server)
        resumed = run(adm, hr_store, HrSyncConfig(approve_plan_id=plan_id), instance)
        assert resumed.output_for_node("hr_apply") == "applied" and len(writes(server)) == 19
        # The red run wrote nothing here, but an incomplete apply may have: both are refreshed.
        assert {key for key, _ in refresh_requests(instance)} == {
            f"hr_refresh:{failed.run_id}",
            f"hr_refresh:{resumed.run_id}",
        }


def test_a_run_with_nothing_to_do_is_a_config_error(
    adm: AdmClientResource, hr_store: WarehouseResource
) -> None:
    with pytest.raises(ValidationError, match="needs files to plan or an approve_plan_id"):
        HrSyncConfig()
    with dg.DagsterInstance.ephemeral() as instance:
        result = hr_sync.execute_in_process(
            run_config={"ops": {"hr_plan": {"config": {}}}},
            resources={"adm": adm, "warehouse": hr_store, "hr_policy": HrPolicyResource()},
            instance=instance,
            raise_on_error=False,
        )
    failure = next(event for event in result.all_events if event.is_step_failure)
    assert failure.step_key == "hr_plan" and "needs files to plan" in str(failure.event_specific_data)
    assert plans(hr_store) == 0


def plans(store: WarehouseResource) -> int:
    """How many plans the warehouse holds."""
    with duckdb.connect(str(store.file), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM hr_plans").fetchone()
    return int(row[0]) if row else 0


def test_a_blocked_plan_waits_for_approval_by_id(
    adm: AdmClientResource, hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    strict = tmp_path / "strict.toml"
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    strict.write_text(
        mapping.replace("manager = { max_count = 50", "manager = { max_count = 1"), encoding="utf-8"
    )
    config = HrSyncConfig(files=DEMO, mapping=str(strict), errors_dir=str(tmp_path))
    first = run(adm, hr_store, config, raise_on_error=False)
    # Red in one line, the same whichever way the plan came: blocked is not done.
    assert (
        step_failure(first)[0] == "hr_plan"
        and "blocked by safety thresholds (manager)" in step_failure(first)[1]
    )
    assert writes(server) == {}
    plan_id = first.output_for_node("hr_plan", "plan_id")
    with pytest.raises(dg.Failure, match="needs a reason"):
        run(adm, hr_store, HrSyncConfig(approve_plan_id=plan_id))
    approved = run(adm, hr_store, HrSyncConfig(approve_plan_id=plan_id, reason="reorg signed off by HR"))
    assert approved.output_for_node("hr_apply") == "applied"
    assert len(writes(server)) == 19


def test_the_sensor_starts_one_run_per_file_once_it_stopped_growing(tmp_path: Path) -> None:
    drop = tmp_path / "users.csv"
    drop.write_bytes(b"Employee ID\n")

    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        result = hr_drop_folder(drop_sensor_context(tmp_path, instance, cursor))
        assert isinstance(result, dg.SensorResult)
        return result

    first = tick(None)
    assert first.run_requests == []
    drop.write_bytes(b"Employee ID\nE100010\n")
    growing = tick(first.cursor)
    assert growing.run_requests == []
    stable = tick(growing.cursor)
    assert [request.run_key for request in stable.run_requests or []] == [
        hashlib.sha256(drop.read_bytes()).hexdigest()
    ]
    request = (stable.run_requests or [])[0]
    assert request.run_config["ops"]["hr_plan"]["config"]["files"] == [str(drop)]
    assert json.loads(stable.cursor or "{}")["users.csv"][0] == drop.stat().st_size


def test_the_sensor_skips_without_a_drop_folder(tmp_path: Path) -> None:
    assert isinstance(hr_drop_folder(drop_sensor_context(tmp_path / "missing")), dg.SkipReason)


def test_a_file_dropped_again_after_a_failed_run_runs_again(tmp_path: Path) -> None:
    content = b"Employee ID\nE100010\n"
    drop = tmp_path / "users.csv"
    drop.write_bytes(content)
    digest = hashlib.sha256(content).hexdigest()
    instance = dg.DagsterInstance.ephemeral()
    cursor: list[str | None] = [None]

    def settled_tick() -> list[str]:
        """Two ticks (a file must keep its size and mtime over two); the run keys requested."""
        keys: list[str] = []
        for _ in range(2):
            result = hr_drop_folder(drop_sensor_context(tmp_path, instance, cursor[0]))
            assert isinstance(result, dg.SensorResult)
            cursor[0] = result.cursor
            keys += [str(request.run_key) for request in result.run_requests or []]
        return keys

    def finished(key: str, status: dg.DagsterRunStatus) -> None:
        """The run the sensor requested, as the daemon would have launched it, ended with ``status``."""
        tags = {"dagster/run_key": key, "adm/hr_file_sha256": digest}
        config = {"ops": {"hr_plan": {"config": {"files": [str(drop)]}}}}
        instance.create_run_for_job(hr_sync, run_config=config, tags=tags, status=status)

    def drop_again() -> None:
        drop.write_bytes(content)
        later = max(drop.stat().st_mtime, time.time()) + 5
        os.utime(drop, (later, later))

    assert settled_tick() == [digest]
    finished(digest, dg.DagsterRunStatus.FAILURE)
    assert settled_tick() == []  # a failed run is not retried on its own: its file goes to failed/
    assert not drop.exists() and [
        path.name.endswith("-users.csv") for path in (tmp_path / "failed").iterdir()
    ]
    drop_again()
    assert settled_tick() == [f"{digest}.2"]  # dropping the file again retries it
    finished(f"{digest}.2", dg.DagsterRunStatus.SUCCESS)
    assert settled_tick() == [] and not drop.exists()  # done: filed in processed/
    assert len(list((tmp_path / "processed").iterdir())) == 1
    drop_again()
    assert settled_tick() == []  # once a run of the content succeeded, the same content does nothing


def test_a_refused_upload_shows_its_rejected_rows_and_error_report_on_the_run(
    adm: AdmClientResource, hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()[:3]
    for row in rows:
        row["email"] = "not an email"
    users = write_users(tmp_path / "users.csv", rows)
    config = HrSyncConfig(files=[str(users)], errors_dir=str(tmp_path / "reports"))
    result = run(adm, hr_store, config, raise_on_error=False)
    failure = next(event for event in result.all_events if event.is_step_failure)
    data = failure.step_failure_data
    assert failure.step_key == "hr_plan" and data.user_failure_data is not None
    metadata = data.user_failure_data.metadata
    assert (metadata["rows"].value, metadata["rejected_rows"].value) == (3, 3)
    report = tmp_path / "reports" / "users.errors.csv"
    assert metadata["error_reports"].value == [str(report)]
    # Which problems, not only how many: the first ones, their count and where the full report is, in
    # the run's log (the failure's description, its first line the refusal) and its metadata.
    shown = (data.user_failure_data.description or "").splitlines()
    assert shown[0] == "every row of the upload is invalid (3); nothing was planned"
    count = metadata["problems"].value
    # Three bad emails, and the duplicate key the three now share.
    assert isinstance(count, int) and count > SHOWN_PROBLEMS
    assert len(shown) == 1 + SHOWN_PROBLEMS + 1
    assert all(line.startswith("- users.csv line ") for line in shown[1:-1])
    assert any("[email_format] 'not an email'" in line for line in shown[1:-1])
    assert shown[-1] == f"{count} problem(s) in all; the full report: {report}"
    assert metadata["first_problems"].value == "\n".join(shown[1:])
