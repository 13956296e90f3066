"""HR files read as a person sees them, planned against a warehouse the real extract filled over HTTP
(and applied to the emulator where the write is the point): the visible sheet only, merged ranges, formulas
saved without a value, hidden columns and rows; and encodings proven by BOMs and by the absence of
control characters, so that following the tool's advice never writes garbage."""

from __future__ import annotations

import codecs
import csv
import io
from datetime import date
from pathlib import Path

import pytest
import xlsxwriter
from openpyxl import Workbook

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.hr.plan import Plan
from models.users import UpdateUserEntities
from pipelines.clients import AdmClientResource
from pipelines.hr.demo_export import USER_EXTRA, USER_FIELDS_ORDER, Row
from pipelines.hr.mapping import CsvOptions, Mapping
from pipelines.hr.problems import Problem
from pipelines.hr.upload import read_upload
from pipelines.hr.validate import validate
from pipelines.hr.workflow import refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    apply,
    client_of,
    plan,
    row_of,
    seeded_snapshot,
    user_id,
    user_rows,
    writes,
)

pytest_plugins = ["tests.test_hr_support"]

HEADER = [MAPPING.users.columns[name] for name in USER_FIELDS_ORDER] + [USER_EXTRA]
ORDER = (*USER_FIELDS_ORDER, USER_EXTRA)


def changes(made: Plan | None) -> dict[tuple[str, str], str]:
    """(HR key, field) -> planned value."""
    assert made is not None
    return {
        (entity.hr_key, change.field): str(change.after)
        for entity in made.entities
        for change in entity.changes
    }


def sheet_rows(rows: list[Row]) -> list[list[str]]:
    return [[row.get(name, "") for name in ORDER] for row in rows]


def rules(problems: list[Problem]) -> set[tuple[int, str, str]]:
    """(line, column, rule) of each problem."""
    return {(p.line, p.column, p.rule) for p in problems}


def other_title(row: Row) -> str:
    return "Buyer" if row["positions"] != "Buyer" else "Controller"


def test_a_hidden_old_sheet_is_never_read_the_visible_one_is_applied(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = user_rows()
    current, old = row_of(rows, "E100010"), dict(row_of(rows, "E100011"))
    promoted = {**current, "positions": other_title(current)}
    old["status"] = "Terminated"  # an old copy kept in the file: a termination nobody asks for now
    workbook = Workbook()
    hidden = workbook.active
    assert hidden is not None
    hidden.title, hidden.sheet_state = "Old copy", "hidden"
    for values in [HEADER, *sheet_rows([old])]:
        hidden.append(values)
    visible = workbook.create_sheet("Workers")
    for values in [HEADER, *sheet_rows([promoted])]:
        visible.append(values)
    workbook.active = 1
    workbook.save(tmp_path / "users.xlsx")

    outcome = plan(hr_store, tmp_path / "users.xlsx")
    assert outcome.validation.problems == []
    assert set(changes(outcome.plan)) == {("E100010", "positions")}
    assert outcome.plan is not None
    assert apply(hr_store, adm, outcome.plan.plan_id).status == "applied"
    assert writes(server) == {f"user:{user_id('E100010')}": 1}  # the hidden sheet's E100011: untouched


def test_two_visible_sheets_are_refused_naming_them(hr_store: WarehouseResource, tmp_path: Path) -> None:
    workbook = Workbook()
    first = workbook.active
    assert first is not None
    first.title = "Workers"
    first.append(HEADER)
    workbook.create_sheet("Leavers").append(HEADER)
    workbook.save(tmp_path / "users.xlsx")
    outcome = plan(hr_store, tmp_path / "users.xlsx")
    (problem,) = outcome.validation.problems
    assert outcome.plan is None and problem.rule == "sheet_choice"
    assert "'Workers' (visible)" in problem.message and "'Leavers' (visible)" in problem.message


def test_a_department_merged_over_three_rows_moves_all_three(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    people = [row for row in rows if row["groups"] == "ORG-0025"][:3]
    target = "ORG-0023"
    column = ORDER.index("groups")
    workbook = xlsxwriter.Workbook(str(tmp_path / "users.xlsx"))  # another writer than the reader's library
    sheet = workbook.add_worksheet("Workers")
    sheet.write_row(0, 0, HEADER)
    for number, values in enumerate(sheet_rows(people), start=1):
        for position, value in enumerate(values):
            sheet.write_string(number, position, value)
    sheet.merge_range(1, column, 3, column, target)
    workbook.close()
    outcome = plan(hr_store, tmp_path / "users.xlsx")
    assert outcome.validation.problems == []
    moved = {key for (key, field), _ in changes(outcome.plan).items() if field == "groups"}
    assert moved == {row["employee_id"] for row in people}


def test_a_range_merged_over_two_columns_is_refused_in_each_cell(tmp_path: Path) -> None:
    rows = user_rows()[:2]
    first, last = ORDER.index("first_name"), ORDER.index("last_name")
    workbook = xlsxwriter.Workbook(str(tmp_path / "users.xlsx"))
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, HEADER)
    for number, values in enumerate(sheet_rows(rows), start=1):
        sheet.write_row(number, 0, values)
    sheet.merge_range(2, first, 2, last, "Ann Lee")
    workbook.close()
    file = read_upload(tmp_path / "users.xlsx")
    assert rules(file.problems) == {(3, "First Name", "merged_cells"), (3, "Last Name", "merged_cells")}
    assert "C3:D3" in file.problems[0].message


def test_a_formula_saved_without_its_value_is_refused_not_read_as_blank(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    people = [row_of(rows, key) for key in ("E100010", "E100011", "E100012")]
    workbook = Workbook()  # openpyxl saves formulas without the values they compute
    sheet = workbook.active
    assert sheet is not None
    sheet.append(HEADER)
    for values in sheet_rows(people):
        sheet.append(values)
    column = "ABCDEFGHIJKLMNOPQ"[ORDER.index("positions")]
    sheet[f"{column}3"] = '=IF(TRUE,"Buyer","Controller")'
    workbook.save(tmp_path / "users.xlsx")
    outcome = plan(hr_store, tmp_path / "users.xlsx")
    assert (3, "Job Title", "formula_without_value") in rules(outcome.validation.problems)
    assert not any(row.valid for row in outcome.validation.rows if row.line == 3)


def test_a_mapped_column_hidden_in_the_workbook_refuses_the_file(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()[:3]
    workbook = xlsxwriter.Workbook(str(tmp_path / "users.xlsx"))
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, HEADER)
    for number, values in enumerate(sheet_rows(rows), start=1):
        sheet.write_row(number, 0, values)
    roles, extra = ORDER.index("roles"), ORDER.index(USER_EXTRA)
    sheet.set_column(roles, roles, None, None, {"hidden": True})
    sheet.set_column(extra, extra, None, None, {"hidden": True})  # unmapped: no problem
    workbook.close()
    outcome = plan(hr_store, tmp_path / "users.xlsx")
    assert outcome.plan is None
    assert rules(outcome.validation.problems) == {(1, "System Roles", "hidden_column")}


def test_a_hidden_row_is_refused(tmp_path: Path) -> None:
    rows = user_rows()[:3]
    workbook = xlsxwriter.Workbook(str(tmp_path / "users.xlsx"))
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, HEADER)
    for number, values in enumerate(sheet_rows(rows), start=1):
        sheet.write_row(number, 0, values)
    sheet.set_row(2, None, None, {"hidden": True})
    workbook.close()
    assert rules(read_upload(tmp_path / "users.xlsx").problems) == {(3, "", "hidden_row")}


NAMES = {"E100010": ("Seán", "O\u2019Brien"), "E100011": ("Robert \u201cBob\u201d", "Smith")}
"""Names with cp1252's typographic quotes (bytes 0x92, 0x93, 0x94: C1 controls read as latin-1)."""


def renamed() -> list[Row]:
    rows = user_rows()
    for key, (first, last) in NAMES.items():
        row_of(rows, key).update(first_name=first, last_name=last)
    return [row_of(rows, key) for key in NAMES]


def csv_bytes(rows: list[Row], encoding: str) -> bytes:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(HEADER)
    writer.writerows(sheet_rows(rows))
    return text.getvalue().encode(encoding)


def with_encoding(encoding: str) -> Mapping:
    options = CsvOptions.model_validate({**MAPPING.csv.model_dump(), "encoding": encoding})
    return MAPPING.model_copy(update={"csv": options})


EXPECTED = {
    (key, field): value
    for key, names in NAMES.items()
    for field, value in zip(("first_name", "last_name"), names, strict=True)
}


def test_following_the_encoding_advice_writes_the_names_as_typed(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(csv_bytes(renamed(), "cp1252"))
    (problem,) = plan(hr_store, path).validation.problems
    assert problem.rule == "encoding" and "--encoding cp1252" in problem.message
    # latin-1 decodes every byte: cp1252's quotes would be C1 controls in the service. Refused, same advice.
    latin = plan(hr_store, path, mapping=with_encoding("latin-1"))
    (problem,) = latin.validation.problems
    assert latin.plan is None and "U+0092" in problem.message and "--encoding cp1252" in problem.message
    followed = plan(hr_store, path, mapping=with_encoding("cp1252"))
    names = {
        key: value for key, value in changes(followed.plan).items() if key[1] in ("first_name", "last_name")
    }
    assert names == EXPECTED


@pytest.mark.parametrize(
    ("codec", "bom"),
    [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-8", codecs.BOM_UTF8)],
)
def test_a_bom_names_the_encoding_whatever_the_setting(
    hr_store: WarehouseResource, tmp_path: Path, codec: str, bom: bytes
) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(bom + csv_bytes(renamed(), codec))
    outcome = plan(hr_store, path, mapping=with_encoding("cp1252"))
    assert outcome.validation.problems == []
    names = {
        key: value for key, value in changes(outcome.plan).items() if key[1] in ("first_name", "last_name")
    }
    assert names == EXPECTED


def test_utf16_without_bom_is_advised_as_utf16_and_utf8_set_as_cp1252_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(csv_bytes(renamed(), "utf-16-le"))
    (problem,) = read_upload(path).problems
    assert problem.rule in ("encoding", "unreadable") and "--encoding utf-16-le" in problem.message
    path.write_bytes(csv_bytes(renamed(), "utf-8"))  # read as cp1252 "Seán" would be "SeÃ¡n"
    (problem,) = read_upload(path, "cp1252").problems
    assert problem.rule == "encoding" and "--encoding utf-8" in problem.message


def test_an_id_that_lost_its_leading_zeros_is_never_written_nor_matched_as_another(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    with client_of(adm) as client:  # the service holds an id with leading zeros
        client.update_user_entities(
            user_id("E100010"), UpdateUserEntities(tenant_id=DEMO_TENANT_ID, employee_id="00123")
        )
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    rows = user_rows()
    mine = {**row_of(rows, "E100010"), "employee_id": 123}  # Excel made the id a number
    report = {**row_of(rows, "E100011"), "manager": 123}
    workbook = xlsxwriter.Workbook(str(tmp_path / "users.xlsx"))
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, HEADER)
    for number, row in enumerate((mine, report), start=1):
        sheet.write_row(number, 0, [row.get(name, "") for name in ORDER])
    workbook.close()
    outcome = plan(hr_store, tmp_path / "users.xlsx")
    assert rules(outcome.validation.problems) >= {
        (2, "Employee ID", "id_leading_zeros"),
        (3, "Manager Employee ID", "id_leading_zeros"),
    }
    assert "'00123'" in outcome.validation.problems[0].message
    assert outcome.plan is None or changes(outcome.plan) == {}
    assert writes(server) == {f"user:{user_id('E100010')}": 1}  # the test's own write only


def test_an_id_holding_an_invisible_character_is_refused(tmp_path: Path) -> None:
    rows = user_rows()
    zero_width = {**row_of(rows, "E100010"), "employee_id": "E100\u200b010"}
    control = {**row_of(rows, "E100011"), "manager": "E100\u0085002"}
    path = tmp_path / "users.csv"
    path.write_bytes(csv_bytes([zero_width, control], "utf-8"))
    validation = validate([read_upload(path)], MAPPING, seeded_snapshot(), date(2026, 2, 1))
    found = {(p.line, p.column, p.rule): p.message for p in validation.problems}
    assert "U+200B" in found[(2, "Employee ID", "invisible_character")]
    # A control character is refused in every written cell (rule control_characters) before ids are read.
    assert "U+0085" in found[(3, "Manager Employee ID", "control_characters")]


def test_dotted_day_first_dates_that_read_both_ways_are_read_day_first(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    doubtful = [
        row
        for row in rows
        if int(row["start_date"][8:]) <= 12 and row["start_date"][5:7] != row["start_date"][8:]
    ]
    delta = doubtful[:2]  # a small delta file: no date in it tells the order by itself
    for row in delta:
        year, month, day = row["start_date"].split("-")
        row["start_date"] = f"{day}.{month}.{year}"
    path = tmp_path / "users.csv"
    path.write_bytes(csv_bytes(delta, "utf-8"))
    options = CsvOptions.model_validate({**MAPPING.csv.model_dump(), "date_formats": ["%d.%m.%Y"]})
    outcome = plan(hr_store, path, mapping=MAPPING.model_copy(update={"csv": options}))
    assert outcome.validation.problems == []
    assert changes(outcome.plan) == {}  # read day first: the service's own start dates


def test_a_totals_row_is_skipped_with_a_note(hr_store: WarehouseResource, tmp_path: Path) -> None:
    rows = renamed()
    path = tmp_path / "users.csv"
    footer = ["Total: 2 workers"] + [""] * (len(HEADER) - 1)
    path.write_bytes(csv_bytes(rows, "utf-8") + ",".join(["Grand total", "2"]).encode() + b"\r\n")
    with path.open("a", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerow(footer)
    outcome = plan(hr_store, path)
    assert outcome.validation.problems == []
    assert [(note.line, note.rule) for note in outcome.validation.notes] == [
        (4, "footer_row"),
        (5, "footer_row"),
    ]
    assert {key for key in changes(outcome.plan) if key[1] != "display_name"} == set(EXPECTED)
