"""Validation of HR files: every rule with a row that breaks it, where each problem is reported, cycles,
formula injection and reading quirks (BOM, quoted line breaks). No network: the planner's view of the
seeded tenant is built in memory."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from emulator.scale import OTHER_TENANT_ID
from pipelines.hr.problems import Problem
from pipelines.hr.upload import read_upload
from pipelines.hr.validate import Validation, validate
from tests.test_hr_support import (
    MAPPING,
    group_rows,
    row_of,
    seeded_snapshot,
    user_rows,
    write_groups,
    write_users,
)

pytest_plugins = ["tests.test_hr_support"]

TODAY = date(2026, 2, 1)
TARGET = "E100011"
"""The employee whose row breaks a rule; it is the second data row, on physical line 3."""
NEIGHBOURS = ("E100010", "E100011", "E100012")


def check(*paths: Path) -> Validation:
    """Validate files against the seeded tenant."""
    return validate([read_upload(path) for path in paths], MAPPING, seeded_snapshot(), TODAY)


def users_file(tmp_path: Path, **changes: str) -> Path:
    """Three seeded employees; ``changes`` are applied to the target's row."""
    rows = user_rows()
    row_of(rows, TARGET).update(changes)
    return write_users(tmp_path / "users.csv", [row_of(rows, key) for key in NEIGHBOURS])


def only_problem(result: Validation) -> Problem:
    """The single problem of a validation."""
    assert len(result.problems) == 1, result.problems
    return result.problems[0]


def test_a_clean_export_has_no_problem(tmp_path: Path) -> None:
    users = write_users(tmp_path / "u.csv", user_rows())
    result = check(users, write_groups(tmp_path / "g.csv", group_rows()))
    assert result.problems == []
    assert all(row.entity_id for row in result.rows)


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("last_name", "Vandenberghe-Oosterhuis", "max_length"),
        ("first_name", "x" * 51, "max_length"),
        ("employee_type", "Fixed-term contractor", "max_length"),
        ("email", "sara.okafor.at.acme.example.com", "email_format"),
        ("mobile_phone", "555-CALL-NOW", "phone_pattern"),
        ("status", "Retired", "unknown_status"),
        ("start_date", "2024-13-01", "date"),
        ("termination_date", "01/02/2024", "date"),
        ("first_name", "=SUM(A1:A9)", "formula_injection"),
        ("last_name", "@cmd", "formula_injection"),
        ("first_name", "-2+3", "formula_injection"),
        ("first_name", "\t=SUM(A1:A9)", "formula_injection"),
        # Trimmed before the check: a leading space hides nothing from a spreadsheet.
        ("first_name", " =1+1", "formula_injection"),
        ("last_name", "  @cmd", "formula_injection"),
        # This tool's own escape, as its error report writes it, does not come back as data.
        ("first_name", "'=1+1", "escaped_formula"),
        ("last_name", "'@cmd", "escaped_formula"),
        ("mobile_phone", "'+1 (555)=cmd|' /C calc'!A0", "escaped_formula"),
        # An extension is no formula; E1's phone pattern refuses it.
        ("mobile_phone", "+1 555 0100 ext 12", "phone_pattern"),
        ("mobile_phone", "+1 555 0100 x12", "phone_pattern"),
        ("first_name", "Ann\rMarie", "control_characters"),
        ("last_name", "Bell\x07", "control_characters"),
        # C1 controls too (cp1252's curly quote read as latin-1), in any text the service would store.
        ("last_name", "O\x92Brien", "control_characters"),
        ("employee_type", "Full\x9btime", "control_characters"),
        ("employment_type", "Part\x1btime", "control_characters"),
        ("start_date", "2024-13-01 00:00:00", "date"),
        ("mobile_phone", "+1 (555)=cmd|' /C calc'!A0", "formula_injection"),
        ("tenant", OTHER_TENANT_ID, "wrong_tenant"),
        ("tenant", "", "wrong_tenant"),
        ("manager", "E199999", "unknown_manager"),
        ("manager", TARGET, "self_manager"),
        ("manager", "E100058", "inactive_manager"),
        ("positions", "Chief Vibes Officer", "unknown_position"),
        ("groups", "ORG-0999", "unknown_group"),
        ("roles", "Approver;Superuser", "unknown_role"),
        ("termination_date", "2001-01-01", "termination_before_start"),
    ],
)
def test_each_user_rule_reports_file_line_column_and_rule(
    tmp_path: Path, field: str, value: str, rule: str
) -> None:
    path = users_file(tmp_path, **{field: value})
    problem = only_problem(check(path))
    assert (problem.file, problem.line, problem.column, problem.rule) == (
        str(path),
        3,
        MAPPING.users.columns[field],
        rule,
    )


def test_a_phone_number_may_start_with_plus_in_the_phone_column_only(tmp_path: Path) -> None:
    assert check(users_file(tmp_path, mobile_phone="+44 20 7946 0958")).problems == []
    problem = only_problem(check(users_file(tmp_path, first_name="+44 20 7946 0958")))
    assert (problem.column, problem.rule) == ("First Name", "formula_injection")


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("group_name", "x" * 101, "max_length"),
        ("legal_name", "y" * 101, "max_length"),
        ("status", "Dissolved", "unknown_status"),
        ("parent", "ORG-0999", "unknown_parent"),
        ("parent", "ORG-0007", "self_parent"),
        ("group_name", "=1+1", "formula_injection"),
        ("tenant", OTHER_TENANT_ID, "wrong_tenant"),
    ],
)
def test_each_group_rule_reports_file_line_column_and_rule(
    tmp_path: Path, field: str, value: str, rule: str
) -> None:
    rows = group_rows()
    target = next(row for row in rows if row["external_id"] == "ORG-0007")
    target[field] = value
    path = write_groups(tmp_path / "groups.csv", [rows[5], target, rows[7]])
    problems = check(path).problems
    assert {(p.line, p.column, p.rule) for p in problems} >= {(3, MAPPING.groups.columns[field], rule)}
    assert {p.line for p in problems} == {3}


def test_duplicate_keys_are_reported_on_every_copy(tmp_path: Path) -> None:
    rows = user_rows()
    copy = dict(row_of(rows, "E100010"))
    path = write_users(tmp_path / "users.csv", [row_of(rows, "E100010"), row_of(rows, "E100011"), copy])
    found = {(p.line, p.column, p.rule) for p in check(path).problems}
    assert found == {
        (2, "Employee ID", "duplicate_key"),
        (4, "Employee ID", "duplicate_key"),
        (2, "Work Email", "duplicate_key"),
        (4, "Work Email", "duplicate_key"),
    }


def test_a_row_of_the_wrong_width_is_invalid(tmp_path: Path) -> None:
    path = users_file(tmp_path)
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    lines[2] = lines[2].rsplit(",", 2)[0]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    problem = only_problem(check(path))
    assert (problem.line, problem.rule) == (3, "field_count")


def test_lines_are_physical_when_a_quoted_cell_spans_lines(tmp_path: Path) -> None:
    rows = user_rows()
    first, second = row_of(rows, "E100010"), row_of(rows, "E100011")
    first["first_name"] = "Ann\nMarie"
    second["email"] = "broken"
    problems = check(write_users(tmp_path / "users.csv", [first, second])).problems
    # The name's line break is refused too, on the line where its row starts.
    assert sorted((p.line, p.column, p.rule) for p in problems) == [
        (2, "First Name", "control_characters"),
        (4, "Work Email", "email_format"),
    ]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig"])
def test_a_bom_is_optional(tmp_path: Path, encoding: str) -> None:
    text = users_file(tmp_path).read_text(encoding="utf-8-sig")
    path = tmp_path / "plain.csv"
    path.write_text(text, encoding=encoding)
    result = check(path)
    assert result.problems == [] and len(result.rows) == 3


def test_unreadable_and_unmapped_files_are_refused_as_a_whole(tmp_path: Path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("Employee ID,First Name\nE100010,Jos\xe9\n".encode("latin-1"))
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("Employee ID,First Name\nE100010,Ann\n", encoding="utf-8")
    rules = {(Path(p.file).name, p.rule, p.column) for p in check(latin, wrong).file_problems}
    assert ("latin.csv", "encoding", "") in rules
    assert ("wrong.csv", "missing_column", "Work Email") in rules


def test_a_manager_cycle_within_the_file(tmp_path: Path) -> None:
    rows = user_rows()
    first, second = row_of(rows, "E100010"), row_of(rows, "E100011")
    first["manager"], second["manager"] = "E100011", "E100010"
    found = {(p.line, p.rule) for p in check(write_users(tmp_path / "u.csv", [first, second])).problems}
    assert found == {(2, "manager_cycle"), (3, "manager_cycle")}


def test_a_manager_cycle_through_the_warehouse(tmp_path: Path) -> None:
    # In the service E100007 reports to E100002; the file makes E100002 report to E100007.
    rows = user_rows()
    boss = row_of(rows, "E100002")
    boss["manager"] = "E100007"
    problem = only_problem(check(write_users(tmp_path / "u.csv", [boss])))
    assert (problem.column, problem.rule) == ("Manager Employee ID", "manager_cycle")
    assert "E100007" in problem.message and "E100002" in problem.message


def test_an_invalid_row_leaves_the_graph_and_cannot_make_a_cycle(tmp_path: Path) -> None:
    rows = user_rows()
    first, second = row_of(rows, "E100010"), row_of(rows, "E100011")
    first.update(manager="E100011", email="broken")
    second["manager"] = "E100010"
    problems = check(write_users(tmp_path / "u.csv", [first, second])).problems
    assert [(p.line, p.rule) for p in problems] == [(2, "email_format")]


@pytest.mark.parametrize("with_report", [True, False])
def test_terminating_a_manager_with_active_reports_flags_the_termination_row(
    tmp_path: Path, with_report: bool
) -> None:
    # E100007 reports to E100002 in the service; the file terminates E100002 and leaves E100007 as it is
    # (or does not list E100007 at all): the termination is what is wrong, not the unchanged report.
    rows = user_rows()
    boss, report = row_of(rows, "E100002"), row_of(rows, "E100007")
    boss.update(status="Terminated", termination_date="2026-01-15")
    listed = [boss, report] if with_report else [boss]
    result = check(write_users(tmp_path / "u.csv", listed))
    problem = only_problem(result)
    assert (problem.line, problem.column, problem.rule) == (2, "Employment Status", "inactive_manager")
    assert "E100007" in problem.message
    assert [row.valid for row in result.rows] == [False, True][: len(listed)]


def test_terminating_a_manager_whose_reports_move_in_the_same_file_is_valid(tmp_path: Path) -> None:
    rows = user_rows()
    boss = row_of(rows, "E100002")
    boss.update(status="Terminated", termination_date="2026-01-15")
    reports = [row for row in rows if row["manager"] == "E100002" and row["employee_id"] != "E100002"]
    for report in reports:
        report["manager"] = "E100001"
    assert check(write_users(tmp_path / "u.csv", [boss, *reports])).problems == []


def test_a_group_parent_cycle(tmp_path: Path) -> None:
    # ORG-0002 (a region) is the parent of ORG-0007 in the service; the file puts it under ORG-0007.
    rows = group_rows()
    region = next(row for row in rows if row["external_id"] == "ORG-0002")
    region["parent"] = "ORG-0007"
    problem = only_problem(check(write_groups(tmp_path / "g.csv", [region])))
    assert (problem.column, problem.rule) == ("Parent Org Unit ID", "group_cycle")


def test_references_resolve_through_the_file(tmp_path: Path) -> None:
    # A department renamed in the groups file can be named by its new name in the users file.
    groups = group_rows()
    renamed = next(row for row in groups if row["external_id"] == "ORG-0007")
    renamed["group_name"] = "Treasury & Risk Americas"
    users = user_rows()
    row_of(users, TARGET)["groups"] = "Treasury & Risk Americas"
    result = check(write_groups(tmp_path / "g.csv", [renamed]), write_users(tmp_path / "u.csv", users))
    assert result.problems == []
    target = next(row for row in result.rows if row.key == TARGET)
    assert target.desired["groups"] == [next(row.entity_id for row in result.rows if row.key == "ORG-0007")]
