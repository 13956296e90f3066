"""Safety thresholds over real HTTP and DuckDB: every kind that hurts at scale is watched (reactivation,
identity, group transfer, the share of all entities), counted over a rolling window across plans, lifted
only with a recorded approver and reason that nothing replaces; the drop-folder sensor never applies a plan
over a threshold; a manager's termination that orphans active reports is the row flagged."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.hr.kinds import Watched
from models.hr.plan import Plan
from models.hr.thresholds import DEFAULT_THRESHOLDS, ThresholdCheck, ThresholdLimit, Thresholds
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import PlanNotApplicableError
from pipelines.hr.dagster import HrSyncConfig, hr_drop_folder
from pipelines.hr.demo_export import Row
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.report import kind_rows
from pipelines.hr.workflow import allow, refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    apply,
    drop_sensor_context,
    hr_sync,
    plan,
    seeded_state,
    step_failure,
    user_rows,
    write_users,
    writes,
)
from warehouse.commit import connect
from warehouse.hr_store import AllowancesFinalError, allowances, load_plan

pytest_plugins = ["tests.test_hr_support"]


def planned(store: WarehouseResource, path: Path) -> Plan:
    """The plan of one users file (it must be made)."""
    made = plan(store, path).plan
    assert made is not None
    return made


def check_of(made: Plan, kind: str) -> ThresholdCheck:
    """One watched kind's check."""
    return next(check for check in made.checks if check.kind == kind)


def leaves(rows: list[Row]) -> list[Row]:
    """Rows of ACTIVE employees nobody reports to: deactivating them leaves no one with an unfit manager."""
    managers = {row["manager"] for row in rows}
    active = {user["employeeId"] for user in seeded_state().users.values() if user["status"] == "ACTIVE"}
    return [row for row in rows if row["employee_id"] in active and row["employee_id"] not in managers]


def deactivate(store: WarehouseResource, adm: AdmClientResource, path: Path, rows: list[Row]) -> Plan:
    """Plan, lift (when over) and apply making ``rows`` Inactive, then refresh the warehouse."""
    for row in rows:
        row["status"] = "Inactive"
    made = planned(store, write_users(path, rows))
    if made.blocked:
        allow(store, made.plan_id, dict.fromkeys(made.blocked, "test: prepared state"), "tester")
    assert apply(store, adm, made.plan_id).status == "applied"
    refresh(SETTINGS, DEMO_TENANT_ID, adm, store)
    return made


def test_thresholds_stored_before_a_kind_was_watched_get_its_default() -> None:
    stored = {"window_days": 3, "limits": {"manager": {"max_count": 1, "max_share": 1.0}}}
    thresholds = Thresholds.model_validate(stored)
    assert thresholds.limits[Watched.MANAGER] == ThresholdLimit(max_count=1, max_share=1.0)
    assert thresholds.limits[Watched.ROLE_ADDITION] == DEFAULT_THRESHOLDS[Watched.ROLE_ADDITION]
    assert Thresholds.model_validate(thresholds.model_dump(mode="json")) == thresholds


def test_reactivating_30_percent_of_the_tenant_is_blocked(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    # Last month's export re-planned after 90 terminations: 90 reactivations, 30% of 300 users.
    rows = user_rows()
    before = {row["employee_id"]: dict(row) for row in rows}
    left = leaves(rows)[:90]
    deactivate(hr_store, adm, tmp_path / "terminations.csv", left)
    made = planned(
        hr_store, write_users(tmp_path / "last_month.csv", [before[row["employee_id"]] for row in left])
    )
    assert made.counts == {"reactivation": 90}
    assert (made.status, check_of(made, "reactivation").count) == ("blocked", 90)
    assert "reactivation" in made.blocked


def test_a_lost_employee_id_prefix_is_a_watched_identity_change(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    # Every row still matches its user through the email fallback, but its employee id changed.
    rows = user_rows()
    for row in rows:
        row["employee_id"] = row["employee_id"].removeprefix("E")
        row["manager"] = row["manager"].removeprefix("E")
    made = planned(hr_store, write_users(tmp_path / "u.csv", rows))
    assert made.counts["identity"] == len(rows) and "profile" not in made.counts
    assert {"identity", "total"} <= set(made.blocked)
    fields = {
        change.field for entity in made.entities for change in entity.changes if change.kind == "identity"
    }
    assert fields == {"employee_id"}


def test_a_mass_transfer_of_groups_is_blocked(hr_store: WarehouseResource, tmp_path: Path) -> None:
    rows = user_rows()
    moved = rows[: round(len(rows) * 0.98)]
    for row in moved:
        row["groups"] = "ORG-0002"
    made = planned(hr_store, write_users(tmp_path / "u.csv", rows))
    assert check_of(made, "group").count >= len(moved) - 10  # some were in ORG-0002 already
    assert "group" in made.blocked


def test_a_mass_grant_of_a_role_is_blocked(hr_store: WarehouseResource, tmp_path: Path) -> None:
    rows = user_rows()
    granted = [row for row in rows if "Approver" not in row["roles"].split(";")][:30]
    for row in granted:
        row["roles"] = ";".join(filter(None, [row["roles"], "Approver"]))
    made = planned(hr_store, write_users(tmp_path / "u.csv", rows))
    assert (check_of(made, "role_addition").count, made.blocked) == (30, ["role_addition"])


def test_the_share_of_all_entities_a_plan_changes_is_limited(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    # A shifted column rewrites a quarter of the last names: a kind no other threshold watches.
    rows = user_rows()
    for row in rows[:75]:
        row["last_name"] = row["first_name"][:20]
    made = planned(hr_store, write_users(tmp_path / "u.csv", rows))
    assert made.blocked == ["total"]
    assert (check_of(made, "total").count, check_of(made, "total").population) == (75, 340)
    assert ("total", "75", "20%", "OVER: blocked") in kind_rows(made)


def test_terminations_split_into_small_plans_are_counted_over_the_window(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()
    first, second, third = (leaves(rows)[start : start + 15] for start in (0, 15, 30))
    for row in [*first, *second]:
        row["status"] = "Inactive"
    # Two plans of 15 made side by side are each within 25 ...
    made = [
        planned(hr_store, write_users(tmp_path / f"{n}.csv", part)) for n, part in enumerate((first, second))
    ]
    assert [plan.status for plan in made] == ["ready", "ready"]
    assert apply(hr_store, adm, made[0].plan_id).status == "applied"
    # ... but once one is applied, the other is checked again when applied: 30 within the window.
    with pytest.raises(PlanNotApplicableError, match="deactivation"):
        apply(hr_store, adm, made[1].plan_id)
    con = connect(hr_store.file)
    try:
        assert load_plan(con, made[1].plan_id).blocked == ["deactivation"]
    finally:
        con.close()
    # A third plan of 15 made after the apply counts the first 15 at once.
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    later = planned(
        hr_store, write_users(tmp_path / "third.csv", [dict(row, status="Inactive") for row in third])
    )
    check = check_of(later, "deactivation")
    assert (later.status, check.count, check.earlier) == ("blocked", 15, 15)
    shown = {row[0]: row for row in kind_rows(later)}["deactivation"]
    assert shown[1:] == ("15", "25 / 5%", "OVER: blocked (30 with plans applied in the window)")


def test_a_window_of_zero_days_counts_each_plan_alone(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()
    first, second = leaves(rows)[:15], leaves(rows)[15:30]
    deactivate(hr_store, adm, tmp_path / "first.csv", first)
    for row in second:
        row["status"] = "Inactive"
    mapping = MAPPING.model_copy(
        update={"thresholds": MAPPING.thresholds.model_copy(update={"window_days": 0})}
    )
    made = plan(hr_store, write_users(tmp_path / "second.csv", second), mapping=mapping).plan
    assert made is not None and made.status == "ready"


def test_a_lift_records_who_and_why_and_is_never_replaced(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = leaves(user_rows())[:30]
    for row in rows:
        row["status"] = "Inactive"
    made = planned(hr_store, write_users(tmp_path / "u.csv", rows))
    assert made.blocked == ["deactivation"]
    allow(hr_store, made.plan_id, {"deactivation": "restructuring, signed off"}, "hr.lead")
    allow(hr_store, made.plan_id, {"deactivation": "a later reason"}, "someone.else")
    assert apply(hr_store, adm, made.plan_id).status == "applied"
    with pytest.raises(AllowancesFinalError, match="final"):
        allow(hr_store, made.plan_id, {"deactivation": "after the fact"}, "someone.else")
    con = connect(hr_store.file)
    try:
        lifted = allowances(con, made.plan_id)
        stored = load_plan(con, made.plan_id)
    finally:
        con.close()
    assert [(a.kind, a.reason, a.approved_by) for a in lifted] == [
        ("deactivation", "restructuring, signed off", "hr.lead")
    ]
    assert stored.allowed == {"deactivation": "restructuring, signed off"}


def run_unattended(adm: AdmClientResource, store: WarehouseResource, path: Path) -> dg.ExecuteInProcessResult:
    """``hr_sync`` run with the config the drop-folder sensor requests for ``path`` (alone in its folder)."""
    instance = dg.DagsterInstance.ephemeral()
    first = hr_drop_folder(drop_sensor_context(path.parent, instance))
    assert isinstance(first, dg.SensorResult)
    stable = hr_drop_folder(drop_sensor_context(path.parent, instance, first.cursor))
    assert isinstance(stable, dg.SensorResult) and stable.run_requests
    return hr_sync.execute_in_process(
        run_config=stable.run_requests[0].run_config,
        resources={"adm": adm, "warehouse": store, "hr_policy": HrPolicyResource()},
        instance=instance,
        raise_on_error=False,
    )


def rows_before_leaving(
    store: WarehouseResource, adm: AdmClientResource, path: Path, count: int
) -> list[Row]:
    """Deactivate ``count`` employees (applied, the warehouse refreshed); their rows as an export taken
    before that shows them."""
    rows = user_rows()
    before = {row["employee_id"]: dict(row) for row in rows}
    left = leaves(rows)[:count]
    deactivate(store, adm, path, left)
    return [before[row["employee_id"]] for row in left]


def test_the_sensor_does_not_apply_a_30_percent_reactivation(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    old = rows_before_leaving(hr_store, adm, tmp_path / "terminations.csv", 90)
    written = writes(server)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    path = write_users(inbox / "last_month.csv", old)
    result = run_unattended(adm, hr_store, path)
    # Red, in one line saying why and how a person applies it: nobody watches an unattended run.
    step, why = step_failure(result)
    assert (step, "blocked by safety thresholds (reactivation" in why) == ("hr_plan", True)
    assert writes(server) == written
    assert not any(event.step_key == "hr_apply" for event in result.all_node_events)
    con = connect(hr_store.file)
    try:
        stored = load_plan(con, result.output_for_node("hr_plan", "plan_id"))
    finally:
        con.close()
    assert (stored.status, "reactivation" in stored.blocked) == ("blocked", True)


def test_an_unattended_run_never_applies_a_plan_over_a_threshold_nor_approves(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    result = drop_deactivations(adm, hr_store, tmp_path)
    assert not result.success and writes(server) == {}
    plan_id = result.output_for_node("hr_plan", "plan_id")
    approve = HrSyncConfig(approve_plan_id=plan_id, reason="sensor", unattended=True)
    with pytest.raises(dg.Failure, match="never approves"):
        run_attended(adm, hr_store, approve)  # the sensor's flag, set by hand: still refused
    assert writes(server) == {}


def drop_deactivations(
    adm: AdmClientResource, store: WarehouseResource, tmp_path: Path
) -> dg.ExecuteInProcessResult:
    """The sensor's unattended run of a dropped file that makes 30 users inactive (over the threshold)."""
    rows = leaves(user_rows())[:30]
    for row in rows:
        row["status"] = "Inactive"
    (tmp_path / "inbox").mkdir()
    return run_unattended(adm, store, write_users(tmp_path / "inbox" / "u.csv", rows))


def run_attended(
    adm: AdmClientResource, store: WarehouseResource, config: HrSyncConfig, raise_on_error: bool = True
) -> dg.ExecuteInProcessResult:
    """``hr_sync`` run by a person with ``config``."""
    return hr_sync.execute_in_process(
        run_config=dg.RunConfig(ops={"hr_plan": config}),
        resources={"adm": adm, "warehouse": store, "hr_policy": HrPolicyResource()},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=raise_on_error,
    )


def test_approving_in_dagster_records_the_approver(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    first = drop_deactivations(adm, hr_store, tmp_path)
    plan_id = first.output_for_node("hr_plan", "plan_id")
    approve = HrSyncConfig(approve_plan_id=plan_id, reason="restructuring", approved_by="hr.lead")
    approved = run_attended(adm, hr_store, approve)
    assert approved.output_for_node("hr_apply") == "applied" and len(writes(server)) == 30
    again = HrSyncConfig(approve_plan_id=plan_id, allow=["deactivation"], reason="later", approved_by="x")
    with pytest.raises(dg.Failure, match="final"):
        run_attended(adm, hr_store, again)
    con = connect(hr_store.file)
    try:
        lifted = allowances(con, plan_id)
    finally:
        con.close()
    assert [(a.kind, a.reason, a.approved_by) for a in lifted] == [
        ("deactivation", "restructuring", "hr.lead")
    ]


@pytest.mark.parametrize("with_report", [True, False])
def test_terminating_a_manager_with_active_reports_is_not_planned(
    hr_store: WarehouseResource, tmp_path: Path, with_report: bool
) -> None:
    rows = user_rows()
    managers = {row["manager"] for row in rows if row["manager"] != row["employee_id"]}
    boss = next(row for row in rows if row["employee_id"] in managers and row["status"] == "Active")
    reports = [row for row in rows if row["manager"] == boss["employee_id"] and row["status"] == "Active"]
    boss["status"] = "Terminated"
    outcome = plan(hr_store, write_users(tmp_path / "u.csv", [boss, *reports[:1]] if with_report else [boss]))
    # The termination is not planned (a file of that row alone plans nothing at all).
    assert outcome.plan is None or outcome.plan.entities == []
    assert [(p.line, p.column, p.rule) for p in outcome.validation.problems] == [
        (2, "Employment Status", "inactive_manager")
    ]


def test_an_approved_mass_change_does_not_block_an_unrelated_plan_of_its_window(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    # 70 last names rewritten (a fifth of the tenant: total is over), lifted with a reason and applied.
    rows = user_rows()
    for row in rows[:70]:
        row["last_name"] = f"{row['last_name']}-Hale"[:20]
    first = planned(hr_store, write_users(tmp_path / "names.csv", rows[:70]))
    assert first.blocked == ["total"]
    allow(hr_store, first.plan_id, {"total": "surname fix, signed off"}, "hr.lead")
    assert apply(hr_store, adm, first.plan_id).status == "applied"
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    # A single promotion in the same window is not blocked by what was approved.
    later = user_rows()[200]
    later["positions"] = "Buyer" if later["positions"] != "Buyer" else "Analyst"
    made = planned(hr_store, write_users(tmp_path / "promotion.csv", [later]))
    assert made.counts == {"position": 1}
    assert (made.status, check_of(made, "total").earlier) == ("ready", 0)


def test_a_dropped_file_with_rejected_rows_is_a_red_run_that_applies_nothing(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = leaves(user_rows())[:40]
    for row in rows[:3]:  # three terminations HR dated before the hire: rejected
        row.update(status="Terminated", termination_date="2001-01-01")
    for row in rows[3:5]:  # two promotions: valid
        row["positions"] = "Buyer" if row["positions"] != "Buyer" else "Controller"
    (tmp_path / "inbox").mkdir()
    result = run_unattended(adm, hr_store, write_users(tmp_path / "inbox" / "u.csv", rows))
    step, why = step_failure(result)
    assert step == "hr_plan" and why.startswith("3 row(s) of the file were rejected")
    assert writes(server) == {}  # not the two valid changes either: a file applies whole, or waits


def test_a_mostly_invalid_upload_is_refused_not_planned(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()[:40]
    for row in rows[4:]:  # 90% of the rows: another system's export, emails in the wrong column
        row["email"] = row["first_name"]
    path = write_users(tmp_path / "u.csv", rows)
    outcome = plan(hr_store, path)
    assert outcome.plan is None
    assert "36 of 40 rows are invalid (90%), more than ADM_HR_MAX_INVALID_SHARE (10%)" in str(outcome.refusal)
    result = run_attended(adm, hr_store, HrSyncConfig(files=[str(path)], errors_dir=str(tmp_path)), False)
    assert step_failure(result) == ("hr_plan", outcome.refusal)
