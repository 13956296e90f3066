"""The ``hr_sync`` job (plan, apply only when allowed or approved) and the drop-folder sensor."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from emulator.server import EmulatorServer
from pipelines.hr.dagster import HrSyncConfig, hr_drop_folder, hr_sync
from pipelines.hr.mapping import SAMPLES
from resources.dagster_resource import AdmClientResource
from resources.warehouse_resource import WarehouseResource
from tests.test_hr_support import writes

pytest_plugins = ["tests.test_hr_support"]

DEMO = [str(SAMPLES / "demo_users.csv"), str(SAMPLES / "demo_groups.csv")]


def run(adm: AdmClientResource, store: WarehouseResource, config: HrSyncConfig) -> dg.ExecuteInProcessResult:
    """Run ``hr_sync`` in process with the test's emulator and warehouse."""
    return hr_sync.execute_in_process(
        run_config=dg.RunConfig(ops={"hr_plan": config}),
        resources={"adm": adm, "warehouse": store},
        instance=dg.DagsterInstance.ephemeral(),
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
    result = run(adm, hr_store, HrSyncConfig(files=DEMO, errors_dir=str(tmp_path)))
    assert result.success
    assert result.output_for_node("hr_apply") == "applied"
    assert "| manager | 4 |" in plan_metadata(result)["plan"].value
    assert len(writes(server)) == 19


def test_a_blocked_plan_waits_for_approval_by_id(
    adm: AdmClientResource, hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    strict = tmp_path / "strict.toml"
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    strict.write_text(
        mapping.replace("manager = { max_count = 50", "manager = { max_count = 1"), encoding="utf-8"
    )
    first = run(adm, hr_store, HrSyncConfig(files=DEMO, mapping=str(strict), errors_dir=str(tmp_path)))
    assert first.success and writes(server) == {}
    plan_id = first.output_for_node("hr_plan", "plan_id")
    with pytest.raises(dg.Failure, match="needs a reason"):
        run(adm, hr_store, HrSyncConfig(approve_plan_id=plan_id))
    approved = run(adm, hr_store, HrSyncConfig(approve_plan_id=plan_id, reason="reorg signed off by HR"))
    assert approved.output_for_node("hr_apply") == "applied"
    assert len(writes(server)) == 19


def test_the_sensor_starts_one_run_per_file_once_it_stopped_growing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADM_HR_DROP_DIR", str(tmp_path))
    drop = tmp_path / "users.csv"
    drop.write_bytes(b"Employee ID\n")

    def tick(cursor: str | None) -> dg.SensorResult:
        result = hr_drop_folder(dg.build_sensor_context(cursor=cursor))
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


def test_the_sensor_skips_without_a_drop_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADM_HR_DROP_DIR", str(tmp_path / "missing"))
    assert isinstance(hr_drop_folder(dg.build_sensor_context()), dg.SkipReason)
