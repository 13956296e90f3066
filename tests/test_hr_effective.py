"""Effective dates: a change dated in the future is planned and stored with its day, left alone by an apply
before that day and written by the apply on it; a later upload naming the entity supersedes it; `hr status`
lists what waits. Real HTTP against the emulator, a real warehouse; time moves through ``now``, never sleeps.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.hr.plan import Plan
from models.hr.status import PlanStatus
from models.users import UpdateUserEntities
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import ApplyReport, PlanNotApplicableError
from pipelines.hr.dagster import hr_apply_due, hr_dated_changes_on_time
from pipelines.hr.demo_export import USER_EXTRA, USER_FIELDS_ORDER, Row, write_export
from pipelines.hr.exports import plan_rows
from pipelines.hr.workflow import apply_stored, plans_due, refresh, stored_plan
from pipelines.tenant_tags import TENANT_TAG
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_apply import current, journal
from tests.test_hr_cli import hr, service_env  # noqa: F401 - a fixture of the CLI test
from tests.test_hr_revert import leaver
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    client_of,
    group_rows,
    plan,
    row_of,
    user_id,
    user_rows,
    write_users,
    writes,
)

pytest_plugins = ["tests.test_hr_support"]

NOW = datetime.now(UTC)
LEAVING = NOW.date() + timedelta(days=60)
"""A termination date still to come (relative to the real clock: planning checks the warehouse's age)."""


def at(day: date) -> datetime:
    """Noon UTC of ``day``: the moment an apply runs in these tests."""
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


def apply_on(store: WarehouseResource, adm: AdmClientResource, plan_id: str, day: date) -> ApplyReport:
    """Apply a stored plan as if the clock showed ``day``."""
    with client_of(adm) as client:
        return apply_stored(store, plan_id, client, str(uuid.uuid4()), now=at(day))


def termination_plan(store: WarehouseResource, tmp_path: Path, name: str = "u.csv") -> Plan:
    """The plan of an export terminating `leaver` on `LEAVING`."""
    rows = user_rows()
    row_of(rows, leaver()).update(status="Terminated", termination_date=LEAVING.isoformat())
    made = plan(store, write_users(tmp_path / name, rows)).plan
    assert made is not None
    return made


def test_a_future_termination_waits_for_its_day_and_is_applied_on_it(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    made = termination_plan(hr_store, tmp_path)
    [entity] = made.entities
    dated = {change.field: change.effective_on for change in entity.changes}
    assert dated == {"status": LEAVING, "termination_date": None}
    exported = {row["field"]: row["effective_on"] for row in plan_rows(made)}
    assert exported == {"status": LEAVING.isoformat(), "termination_date": ""}

    today = apply_on(hr_store, adm, made.plan_id, NOW.date())

    key = user_id(leaver())
    assert (today.status, today.outcomes) == (PlanStatus.SCHEDULED, {"scheduled": 1})
    assert current(server, "user", key)["status"] == "ACTIVE"
    assert current(server, "user", key)["termination_date"] == LEAVING.isoformat()  # data: written now
    status, _, message = journal(hr_store, made.plan_id)[leaver()]
    assert status == "scheduled" and message == f"waiting: status on {LEAVING}"
    assert plans_due(hr_store, DEMO_TENANT_ID, at(LEAVING - timedelta(days=1))) == []
    assert apply_on(hr_store, adm, made.plan_id, LEAVING - timedelta(days=1)).writes == 0

    assert plans_due(hr_store, DEMO_TENANT_ID, at(LEAVING)) == [made.plan_id]
    due = apply_on(hr_store, adm, made.plan_id, LEAVING)

    assert (due.status, due.outcomes, due.writes) == (PlanStatus.APPLIED, {"applied": 1}, 1)
    assert current(server, "user", key)["status"] == "INACTIVE"
    assert writes(server) == {f"user:{key}": 2}
    assert plans_due(hr_store, DEMO_TENANT_ID, at(LEAVING)) == []


def test_a_change_come_due_is_skipped_when_the_record_changed_since(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    made = termination_plan(hr_store, tmp_path)
    apply_on(hr_store, adm, made.plan_id, NOW.date())
    with client_of(adm) as client:
        client.update_user_entities(user_id(leaver()), _status_body("INACTIVE"))
        client.update_user_entities(user_id(leaver()), _status_body("ACTIVE"))
        client.update_user_entities(user_id(leaver()), _status_body("INVITED"))

    due = apply_on(hr_store, adm, made.plan_id, LEAVING)

    assert due.outcomes == {"skipped_changed": 1} and due.writes == 0
    assert current(server, "user", user_id(leaver()))["status"] == "INVITED"


def _status_body(status: str) -> UpdateUserEntities:
    """An E1 body setting only the status."""
    return UpdateUserEntities.model_validate({"tenant_id": DEMO_TENANT_ID, "status": status})


def test_a_row_effective_date_dates_a_transfer(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = user_rows()
    moved = row_of(rows, "E100010")
    other = next(unit["external_id"] for unit in group_rows() if unit["external_id"] not in moved["groups"])
    next_month = NOW.date() + timedelta(days=30)
    moved.update(groups=other, first_name="Renamed", effective_date=next_month.isoformat())
    made = plan(hr_store, _with_effective_dates(tmp_path / "u.csv", rows)).plan
    assert made is not None
    [entity] = made.entities
    dated = {change.field: change.effective_on for change in entity.changes}
    # The display name follows the name, on the same day.
    assert dated == {"groups": next_month, "first_name": next_month, "display_name": next_month}
    before = current(server, "user", user_id("E100010"))

    assert apply_on(hr_store, adm, made.plan_id, NOW.date()).outcomes == {"scheduled": 1}
    assert current(server, "user", user_id("E100010")) == before and writes(server) == {}


def _with_effective_dates(path: Path, rows: list[Row]) -> Path:
    """A users export with the optional Effective Date column."""
    return write_export(path, rows, MAPPING.users, (*USER_FIELDS_ORDER, "effective_date"), USER_EXTRA)


def test_a_later_upload_supersedes_a_pending_change(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    made = termination_plan(hr_store, tmp_path)
    apply_on(hr_store, adm, made.plan_id, NOW.date())
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)

    # HR cancels the termination: the employee is Active again, termination date left as the service has it.
    rows = user_rows()
    row_of(rows, leaver()).update(status="Active", termination_date="")
    later = plan(hr_store, write_users(tmp_path / "again.csv", rows)).plan
    assert later is not None and later.entities == []

    status, _, message = journal(hr_store, made.plan_id)[leaver()]
    assert status == "superseded" and message == f"superseded by plan {later.plan_id}"
    assert stored_plan(hr_store, made.plan_id).status == PlanStatus.APPLIED
    assert plans_due(hr_store, DEMO_TENANT_ID, at(LEAVING)) == []
    with pytest.raises(PlanNotApplicableError, match="applies once"):
        apply_on(hr_store, adm, made.plan_id, LEAVING)
    assert current(server, "user", user_id(leaver()))["status"] == "ACTIVE"


def test_hr_status_lists_pending_changes(
    service_env: Path,  # noqa: F811 - the fixture imported above
    hr_store: WarehouseResource,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one table row per line
    made = termination_plan(hr_store, tmp_path)
    code, output = hr("apply", made.plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 0 and "scheduled 1" in output, output

    code, output = hr("status", "--warehouse", str(hr_store.file))

    assert code == 0, output
    assert "Pending changes" in output and "scheduled" in output
    line = next(line for line in output.splitlines() if leaver() in line and str(LEAVING) in line)
    assert "status" in line and "INACTIVE" in line

    code, shown = hr("show", made.plan_id, "--warehouse", str(hr_store.file))
    assert code == 0 and f"INACTIVE (on {LEAVING})" in shown, shown


def test_the_nightly_schedule_requests_a_run_for_each_plan_come_due(
    hr_store: WarehouseResource,
    adm: AdmClientResource,
    tmp_path: Path,
) -> None:
    made = termination_plan(hr_store, tmp_path)
    apply_on(hr_store, adm, made.plan_id, NOW.date())

    store = {"warehouse": hr_store}
    day_before = at(LEAVING - timedelta(days=1))
    before = hr_apply_due(dg.build_schedule_context(scheduled_execution_time=day_before, resources=store))
    on_the_day = hr_apply_due(
        dg.build_schedule_context(scheduled_execution_time=at(LEAVING), resources=store)
    )

    assert isinstance(before, dg.SkipReason)
    assert isinstance(on_the_day, list)
    [request] = on_the_day
    assert request.run_key == f"hr_due:{made.plan_id}:{LEAVING}"
    assert request.run_config["ops"]["hr_plan"]["config"]["approve_plan_id"] == made.plan_id
    assert request.tags[TENANT_TAG] == DEMO_TENANT_ID  # it takes its turn with the tenant's syncs


def test_an_active_row_with_a_termination_date_to_come_schedules_the_deactivation(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    # Workday's pending leaver: still "Active" today, with the day they leave.
    rows = user_rows()
    row_of(rows, leaver()).update(status="Active", termination_date=LEAVING.isoformat())
    made = plan(hr_store, write_users(tmp_path / "u.csv", rows)).plan
    assert made is not None
    [entity] = made.entities
    assert {(c.field, c.after, c.effective_on) for c in entity.changes} == {
        ("status", "INACTIVE", LEAVING),
        ("termination_date", LEAVING.isoformat(), None),
    }
    assert apply_on(hr_store, adm, made.plan_id, NOW.date()).status == PlanStatus.SCHEDULED
    assert apply_on(hr_store, adm, made.plan_id, LEAVING).status == PlanStatus.APPLIED
    assert current(server, "user", user_id(leaver()))["status"] == "INACTIVE"


def test_a_dated_change_past_its_day_is_flagged_overdue(
    service_env: Path,  # noqa: F811 - the fixture imported above
    hr_store: WarehouseResource,
    tmp_path: Path,
) -> None:
    made = termination_plan(hr_store, tmp_path)
    code, output = hr("apply", made.plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 0 and "scheduled 1" in output, output
    code, output = hr("status", "--problems", "--json", "--warehouse", str(hr_store.file))
    assert code == 0 and json.loads(output)["pending"] == []  # waiting for its day is no problem
    # As if applied three days ago for a day two days ago, with no apply since (the schedule stopped).
    past = NOW.date() - timedelta(days=2)
    with duckdb.connect(hr_store.file) as con:
        dated = "UPDATE hr_plan_items SET effective_on = ? WHERE plan_id = ? AND field = 'status'"
        con.execute(dated, [past, made.plan_id])
        earlier = [past - timedelta(days=1), made.plan_id]
        con.execute("UPDATE hr_plan_entities SET written_through = ? WHERE plan_id = ?", earlier)
    code, output = hr("status", "--problems", "--json", "--warehouse", str(hr_store.file))
    [late] = json.loads(output)["pending"]
    assert (late["hr_key"], late["field"], late["overdue"]) == (leaver(), "status", True)
    assert "OVERDUE" in hr("status", "--problems", "--warehouse", str(hr_store.file))[1]
    check = hr_dated_changes_on_time(warehouse=hr_store)  # the Dagster check says so too
    assert isinstance(check, dg.AssetCheckResult) and not check.passed
    assert check.description and check.description.startswith("1 dated HR change(s) overdue")
