"""`hr revert`: a new plan from an applied plan's journal that puts its before values back, through the
same checks, and that leaves alone an entity changed since. Real HTTP against the emulator, a real
warehouse refreshed by the real extract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.hr.kinds import ChangeKind
from pipelines.clients import AdmClientResource
from pipelines.hr.revert import NotRevertibleError, revert_stored
from pipelines.hr.workflow import refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.conftest import loopback
from tests.test_hr_apply import adm_headers, current
from tests.test_hr_cli import hr, service_env
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    apply,
    faults,
    half_applicable_plan,
    plan,
    row_of,
    seeded_snapshot,
    user_id,
    user_rows,
    write_users,
    writes,
)

__all__ = ["service_env"]  # the CLI tests' fixture, used here

pytest_plugins = ["tests.test_hr_support"]


def leaver() -> str:
    """An employee who manages nobody (terminating a manager of active reports is refused)."""
    rows = user_rows()
    managers = {row["manager"] for row in rows}
    return next(row["employee_id"] for row in rows[12:] if row["employee_id"] not in managers)


def applied_plan(store: WarehouseResource, adm: AdmClientResource, tmp_path: Path) -> str:
    """Plan and apply a file that moves a position, a manager and terminates someone; refresh after."""
    rows = user_rows()
    row_of(rows, "E100010")["positions"] = "Buyer"
    row_of(rows, "E100011")["manager"] = "E100003"
    row_of(rows, leaver())["status"] = "Terminated"
    made = plan(store, write_users(tmp_path / "u.csv", rows)).plan
    assert made is not None and {entity.hr_key for entity in made.entities} == {
        "E100010",
        "E100011",
        leaver(),
    }
    assert apply(store, adm, made.plan_id).outcomes == {"applied": 3}
    refresh(SETTINGS, DEMO_TENANT_ID, adm, store)
    return made.plan_id


def test_a_revert_restores_the_before_values_and_leaves_an_entity_changed_since(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    plan_id = applied_plan(hr_store, adm, tmp_path)
    # Someone moves E100011 again after the plan: the revert must not undo that.
    with loopback(base_url=server.base_url, headers=adm_headers()) as http:
        path = f"/auth/v1/user/update-entities/{user_id('E100011')}"
        http.patch(
            path, json={"tenantId": DEMO_TENANT_ID, "managerId": user_id("E100001")}
        ).raise_for_status()
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)

    revert = revert_stored(hr_store, plan_id, MAPPING)

    assert [(left.entity.hr_key, "manager" in left.reason) for left in revert.left] == [("E100011", True)]
    kinds = {entity.hr_key: {c.kind for c in entity.changes} for entity in revert.plan.entities}
    assert kinds == {"E100010": {ChangeKind.POSITION}, leaver(): {ChangeKind.REACTIVATION}}
    assert apply(hr_store, adm, revert.plan.plan_id).outcomes == {"applied": 2}
    before = seeded_snapshot().user_values
    for key in ("E100010", leaver()):
        assert current(server, "user", user_id(key)) == before[user_id(key)], key
    assert current(server, "user", user_id("E100011"))["manager"] == user_id("E100001")


def test_only_an_applied_plan_can_be_reverted(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()
    row_of(rows, "E100010")["positions"] = "Buyer"
    made = plan(hr_store, write_users(tmp_path / "u.csv", rows)).plan
    assert made is not None

    with pytest.raises(NotRevertibleError, match="only an applied or incomplete plan"):
        revert_stored(hr_store, made.plan_id, MAPPING)


def test_the_revert_of_a_termination_with_a_date_restores_the_status_and_says_what_it_keeps(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = user_rows()
    row_of(rows, leaver()).update(status="Terminated", termination_date="2026-01-15")
    made = plan(hr_store, write_users(tmp_path / "u.csv", [row_of(rows, leaver())])).plan
    assert made is not None and apply(hr_store, adm, made.plan_id).outcomes == {"applied": 1}
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)

    revert = revert_stored(hr_store, made.plan_id, MAPPING)

    # Said before anything is applied: the date cannot be emptied (E1 refuses null); the status is restored.
    assert [(part.entity.hr_key, part.reason) for part in revert.partial] == [
        (leaver(), "termination_date stays 2026-01-15 (the service cannot empty a field)")
    ]
    (entity,) = revert.plan.entities
    assert [(c.field, c.after, c.kind) for c in entity.changes] == [
        ("status", "ACTIVE", ChangeKind.REACTIVATION)
    ]
    assert revert.plan.counts == {"reactivation": 1}
    assert apply(hr_store, adm, revert.plan.plan_id).outcomes == {"applied": 1}
    after = current(server, "user", user_id(leaver()))
    assert (after["status"], after["termination_date"]) == ("ACTIVE", "2026-01-15")


def test_reverting_an_incomplete_plan_closes_it(
    adm: AdmClientResource,
    service_env: Path,
    hr_store: WarehouseResource,
    server: EmulatorServer,
    tmp_path: Path,
) -> None:
    # ``adm`` first: made before ``service_env`` puts the token in the environment (it stays a value).
    made = half_applicable_plan(hr_store, server, tmp_path)
    report = apply(hr_store, adm, made.plan_id)
    assert (report.status, report.outcomes) == ("incomplete", {"applied": 1, "planned": 1})
    faults(server)
    # The entity not applied says what the service answered its writes.
    detail = json.loads(hr("status", made.plan_id, "--json", "--warehouse", str(hr_store.file))[1])
    (unapplied,) = [entity for entity in detail["entities"] if entity["status"] == "planned"]
    assert unapplied["message"].startswith("read back: not applied (the service answered 503: ")
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)

    revert = revert_stored(hr_store, made.plan_id, MAPPING)

    code, output = hr("apply", made.plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 1 and f"closed by its revert, plan {revert.plan.plan_id}" in output
    assert sum(writes(server).values()) == 1  # the other half was never written
    detail = json.loads(hr("status", made.plan_id, "--json", "--warehouse", str(hr_store.file))[1])
    assert (detail["status"], detail["superseded_by"]) == ("superseded", revert.plan.plan_id)
    assert unapplied["hr_key"] in {e["hr_key"] for e in detail["entities"] if e["status"] == "superseded"}
    shown = hr("status", made.plan_id, "--warehouse", str(hr_store.file))[1]
    assert f"Closed by its revert, plan {revert.plan.plan_id}" in shown
    assert apply(hr_store, adm, revert.plan.plan_id).outcomes == {"applied": 1}
    for key in ("E100010", "E100012"):
        assert current(server, "user", user_id(key)) == seeded_snapshot().user_values[user_id(key)], key
