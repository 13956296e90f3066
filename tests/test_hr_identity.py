"""Identity evidence over real HTTP and DuckDB: a row changes the user its key found only when it agrees
with that user beyond the key (the email, or the first and last name with the start date: a shared name
is no proof); another tenant's export with the same employee ids is refused whole, in the CLI's planning
and in a Dagster run alike; a rename or an email change still plans and applies, and a renamed person's
display name follows their name. Org units alike: a row changes the unit its org unit id found only when
it agrees on the name or the legal name."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from emulator.scale import DEMO_TENANT_ID, OTHER_TENANT_ID, OTHER_TENANT_SCALE
from emulator.seed import seed_tenant
from emulator.server import EmulatorServer
from models.groups import Group
from models.hr.fields import Values, group_values, user_values
from models.users import User
from pipelines.clients import AdmClientResource
from pipelines.hr.dagster import HrSyncConfig
from pipelines.hr.demo_export import (
    GROUP_EXTRA,
    GROUP_FIELDS_ORDER,
    SEED,
    USER_EXTRA,
    USER_FIELDS_ORDER,
    Row,
    export_groups,
    export_users,
    write_export,
)
from pipelines.hr.policy import HrPolicyResource
from pipelines.warehouse_resource import WarehouseResource
from tests.conftest import loopback, stored
from tests.test_hr_cli import hr, service_env
from tests.test_hr_support import (
    MAPPING,
    apply,
    demo_files,
    group_id,
    group_rows,
    hr_sync,
    plan,
    row_of,
    seeded_snapshot,
    step_failure,
    user_id,
    user_rows,
    write_groups,
    write_users,
    writes,
)
from warehouse.commit import writing
from warehouse.tenants import set_label

pytest_plugins = ["tests.test_hr_support"]
__all__ = ["service_env"]  # the CLI tests' fixture, used here

NO_TENANT_COLUMN = tuple(name for name in USER_FIELDS_ORDER if name != "tenant")
"""Most HRIS exports carry no tenant column."""
DEMO_FILES = [str(path) for path in demo_files()]


def globex_rows() -> list[Row]:
    """The emulator's second tenant (Globex) as its HR system exports it: the same employee-id range."""
    return export_users(seed_tenant(SEED, OTHER_TENANT_ID, OTHER_TENANT_SCALE, "Globex"))


def write_untenanted(path: Path, rows: list[Row]) -> Path:
    """A users export without the tenant column."""
    return write_export(path, rows, MAPPING.users, NO_TENANT_COLUMN, USER_EXTRA)


def service_user(server: EmulatorServer, employee_id: str) -> Values:
    """A seeded employee's values as the emulator holds them now (read over HTTP)."""
    with loopback(base_url=server.base_url) as client:
        return user_values(User.model_validate(stored(client, "users", user_id(employee_id))))


def test_another_tenants_export_with_the_same_employee_ids_is_refused_whole(
    hr_store: WarehouseResource, tmp_path: Path, server: EmulatorServer
) -> None:
    with writing(hr_store.file, "test", 5.0) as con:
        set_label(con, DEMO_TENANT_ID, "acme")
    ours = {row["employee_id"] for row in user_rows()}
    theirs = [row for row in globex_rows() if row["employee_id"] in ours]
    assert len(theirs) > 20  # the premise: the two tenants number their people alike
    outcome = plan(hr_store, write_untenanted(tmp_path / "globex.csv", theirs))
    assert outcome.plan is None and outcome.refusal is not None
    assert outcome.refusal.startswith(f"this file is not about this tenant acme ({DEMO_TENANT_ID})")
    assert {problem.rule for problem in outcome.validation.file_problems} == {"foreign_file"}
    assert writes(server) == {}


def test_a_one_row_export_of_another_tenant_is_refused_in_a_dagster_run(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    # The reported case: Globex's E100011 dropped for Acme, made an Administrator under Acme's id.
    row = row_of(globex_rows(), "E100011") | {"roles": "Administrator"}
    path = write_untenanted(tmp_path / "one.csv", [row])
    config = HrSyncConfig(files=[str(path)], errors_dir=str(tmp_path), unattended=True)
    result = hr_sync.execute_in_process(
        run_config=dg.RunConfig(ops={"hr_plan": config}),
        resources={"adm": adm, "warehouse": hr_store, "hr_policy": HrPolicyResource()},
        raise_on_error=False,
    )
    assert not result.success
    assert f"this file is not about this tenant {DEMO_TENANT_ID}" in step_failure(result)[1]
    report = (tmp_path / "one.errors.csv").read_text(encoding="utf-8-sig")
    assert "[identity_mismatch]" in report and "E100011" in report
    assert writes(server) == {}
    assert service_user(server, "E100011") == seeded_snapshot().user_values[user_id("E100011")]


def test_a_row_naming_someone_else_is_refused_and_the_rest_applies(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    rows = user_rows()
    stranger = row_of(globex_rows(), "E100020")
    wrong = row_of(rows, "E100020")
    wrong |= {name: stranger[name] for name in ("first_name", "last_name", "email")} | {"mobile_phone": ""}
    row_of(rows, "E100030")["mobile_phone"] = "+1 555 0100"
    outcome = plan(hr_store, write_users(tmp_path / "u.csv", rows))
    assert outcome.plan is not None
    problems = [(p.line, p.column, p.rule) for p in outcome.validation.problems]
    line = 2 + rows.index(wrong)
    assert problems == [(line, "Employee ID", "identity_mismatch")]
    message = outcome.validation.problems[0].message
    assert stranger["email"] in message
    assert "neither the email nor the first and last name with the start date agrees" in message
    assert [entity.hr_key for entity in outcome.plan.entities] == ["E100030"]
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    assert service_user(server, "E100020") == seeded_snapshot().user_values[user_id("E100020")]
    assert service_user(server, "E100030")["mobile_phone"] == "+1 555 0100"


def test_another_tenants_person_of_the_same_name_is_no_proof_and_writes_nothing_of_theirs(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    """Every tenant's E100000 is "Integration Admin": Globex's row, among this tenant's own, agrees on the
    name alone, and would otherwise take Acme's admin as Globex's (its email, start date and roles)."""
    rows = user_rows()
    theirs = row_of(globex_rows(), "E100000")
    ours = row_of(rows, "E100000")
    assert (theirs["first_name"], theirs["last_name"]) == (ours["first_name"], ours["last_name"])
    assert theirs["email"] != ours["email"] and theirs["start_date"] != ours["start_date"]
    rows[rows.index(ours)] = theirs
    row_of(rows, "E100030")["mobile_phone"] = "+1 555 0100"
    outcome = plan(hr_store, write_untenanted(tmp_path / "u.csv", rows))
    assert outcome.plan is not None
    problems = [(p.line, p.rule) for p in outcome.validation.problems]
    assert problems == [(2 + rows.index(theirs), "identity_mismatch")]
    assert [entity.hr_key for entity in outcome.plan.entities] == ["E100030"]
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    assert writes(server) == {f"user:{user_id('E100030')}": 1}
    assert service_user(server, "E100000") == seeded_snapshot().user_values[user_id("E100000")]


def test_an_email_change_is_proven_by_the_name_with_the_start_date_and_by_nothing_less(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    moved = row_of(user_rows(), "E100012") | {"email": "moved.12@acme-hr.example.com"}
    for start, planned in (({}, True), ({"start_date": "2001-02-03"}, False), ({"start_date": ""}, False)):
        rows = user_rows()
        rows[rows.index(row_of(rows, "E100012"))] = moved | start
        outcome = plan(hr_store, write_users(tmp_path / "u.csv", rows))
        problems = [(p.column, p.rule) for p in outcome.validation.problems]
        assert problems == ([] if planned else [("Employee ID", "identity_mismatch")]), start
        assert outcome.plan is not None
        entities = outcome.plan.entities
        fields = [(entity.hr_key, change.field) for entity in entities for change in entity.changes]
        assert fields == ([("E100012", "email")] if planned else []), start


def test_a_rename_applies_and_the_display_name_follows(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    rows = user_rows()
    renamed = row_of(rows, "E100040")
    renamed["last_name"] = "Okonkwo-Lee"
    before = seeded_snapshot().user_values[user_id("E100040")]
    assert before["display_name"] == f"{before['first_name']} {before['last_name']}"
    outcome = plan(hr_store, write_users(tmp_path / "u.csv", rows))
    assert outcome.plan is not None and not outcome.validation.problems
    (entity,) = outcome.plan.entities
    assert {change.field: change.after for change in entity.changes} == {
        "last_name": "Okonkwo-Lee",
        "display_name": f"{renamed['first_name']} Okonkwo-Lee",
    }
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    expected = before | {"last_name": "Okonkwo-Lee", "display_name": f"{renamed['first_name']} Okonkwo-Lee"}
    assert service_user(server, "E100040") == expected


def test_an_email_change_applies(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    rows = user_rows()
    moved = row_of(rows, "E100050")
    moved["email"] = "new.address@acme-group.example.com"
    outcome = plan(hr_store, write_users(tmp_path / "u.csv", rows))
    assert outcome.plan is not None and not outcome.validation.problems
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    expected = seeded_snapshot().user_values[user_id("E100050")] | {"email": moved["email"]}
    assert service_user(server, "E100050") == expected


def test_a_rename_and_an_email_change_at_once_prove_nothing(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    both = row_of(rows, "E100060")
    both |= {"last_name": "Marsh", "email": "someone.else@acme.example.com"}
    outcome = plan(hr_store, write_users(tmp_path / "u.csv", rows))
    assert outcome.plan is not None and outcome.plan.entities == []
    assert [(p.column, p.rule) for p in outcome.validation.problems] == [("Employee ID", "identity_mismatch")]
    assert "change one, apply it, then the other" in outcome.validation.problems[0].message


def test_the_command_line_names_the_tenant_as_extract_does_and_refuses_another_tenants_file(
    service_env: Path, hr_store: WarehouseResource, monkeypatch: pytest.MonkeyPatch, server: EmulatorServer
) -> None:
    monkeypatch.setenv("ADM_TENANTS", f"acme={DEMO_TENANT_ID},globex={OTHER_TENANT_ID}")
    with writing(hr_store.file, "test", 5.0) as con:
        set_label(con, DEMO_TENANT_ID, "acme")  # as the extract labels it
    theirs = write_untenanted(service_env / "globex.csv", globex_rows())
    code, output = hr("plan", str(theirs), "--tenant", "ACME", "--warehouse", str(hr_store.file))
    assert code == 1, output
    assert f"this file is not about this tenant acme ({DEMO_TENANT_ID})" in " ".join(output.split())
    code, output = hr("plan", *DEMO_FILES, "--tenant", "acme", "--warehouse", str(hr_store.file))
    assert code == 0, output
    code, output = hr("plan", *DEMO_FILES, "--tenant", "globex", "--warehouse", str(hr_store.file))
    assert code == 1 and f"holds no extract of tenant {OTHER_TENANT_ID}" in " ".join(output.split()), output
    assert writes(server) == {}


def globex_groups() -> list[Row]:
    """Globex's org units as its HR system exports them: the same org unit ids as Acme's first ones."""
    return export_groups(seed_tenant(SEED, OTHER_TENANT_ID, OTHER_TENANT_SCALE, "Globex"))


def service_group(server: EmulatorServer, external_id: str) -> Values:
    """A seeded org unit's values as the emulator holds them now (read over HTTP)."""
    with loopback(base_url=server.base_url) as client:
        return group_values(Group.model_validate(stored(client, "groups", group_id(external_id))))


def unit_of(rows: list[Row], external_id: str) -> Row:
    """The org-unit row of ``external_id``."""
    return next(row for row in rows if row["external_id"] == external_id)


def test_another_tenants_org_units_with_the_same_ids_are_refused_whole(
    hr_store: WarehouseResource, tmp_path: Path, server: EmulatorServer
) -> None:
    theirs = globex_groups()
    assert {row["external_id"] for row in theirs} <= {row["external_id"] for row in group_rows()}
    untenanted = tuple(name for name in GROUP_FIELDS_ORDER if name != "tenant")
    path = write_export(tmp_path / "globex_units.csv", theirs, MAPPING.groups, untenanted, GROUP_EXTRA)
    outcome = plan(hr_store, path)
    assert outcome.plan is None and outcome.refusal is not None
    assert outcome.refusal.startswith(f"this file is not about this tenant {DEMO_TENANT_ID}")
    assert "another org unit (identity_mismatch)" in outcome.refusal
    mismatched = {p.line for p in outcome.validation.problems if p.rule == "identity_mismatch"}
    # Each unit named otherwise than Acme's of its id is refused; one named alike (Legal APAC) agrees.
    ours = {row["external_id"]: row["group_name"] for row in group_rows()}
    renamed = [line for line, row in enumerate(theirs, 2) if row["group_name"] != ours[row["external_id"]]]
    assert mismatched == set(renamed) and len(renamed) > len(theirs) / 2
    assert writes(server) == {}


def test_an_org_unit_naming_another_unit_is_refused_and_renames_and_moves_apply(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path, server: EmulatorServer
) -> None:
    rows = group_rows()
    stranger = unit_of(globex_groups(), "ORG-0003")
    wrong = unit_of(rows, "ORG-0010")
    wrong |= {"group_name": stranger["group_name"], "legal_name": stranger["legal_name"]}
    renamed = unit_of(rows, "ORG-0011")
    renamed["group_name"] = "Platform Engineering"
    relegal = unit_of(rows, "ORG-0012")
    relegal["legal_name"] = "Acme Services GmbH"
    moved = unit_of(rows, "ORG-0013")
    moved["parent"] = "ORG-0003" if moved["parent"] != "ORG-0003" else "ORG-0002"
    outcome = plan(hr_store, write_groups(tmp_path / "units.csv", rows))
    assert outcome.plan is not None
    problems = [(p.line, p.column, p.rule) for p in outcome.validation.problems]
    assert problems == [(2 + rows.index(wrong), "Org Unit ID", "identity_mismatch")]
    message = outcome.validation.problems[0].message
    assert stranger["group_name"] in message and "neither the name nor the legal name agrees" in message
    assert sorted(entity.hr_key for entity in outcome.plan.entities) == ["ORG-0011", "ORG-0012", "ORG-0013"]
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    seeded = seeded_snapshot().group_values
    assert service_group(server, "ORG-0010") == seeded[group_id("ORG-0010")]
    renamed_name = {"group_name": "Platform Engineering", "display_name": "Platform Engineering"}
    assert service_group(server, "ORG-0011") == seeded[group_id("ORG-0011")] | renamed_name
    relegal_name = {"legal_name": "Acme Services GmbH"}
    assert service_group(server, "ORG-0012") == seeded[group_id("ORG-0012")] | relegal_name
    assert service_group(server, "ORG-0013")["parent"] == [group_id(moved["parent"])]


def test_an_org_unit_renamed_and_given_another_legal_name_at_once_proves_nothing(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = group_rows()
    both = unit_of(rows, "ORG-0020")
    both |= {"group_name": "Somewhere Else", "legal_name": "Somebody Else Inc"}
    outcome = plan(hr_store, write_groups(tmp_path / "units.csv", rows))
    assert outcome.plan is not None and outcome.plan.entities == []
    assert [(p.column, p.rule) for p in outcome.validation.problems] == [("Org Unit ID", "identity_mismatch")]
    assert "change one, apply it, then the other" in outcome.validation.problems[0].message
