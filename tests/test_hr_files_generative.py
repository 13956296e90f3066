"""Generative: HR files drawn from what HR systems and spreadsheets produce (workbooks with a hidden old
sheet or not, merged ranges, formulas with and without the value Excel saved, an id Excel made a number,
CSV in UTF-8 with or without BOM, UTF-16, cp1252 read with the right or a wrong setting, totals rows),
planned against a warehouse the real extract filled over HTTP from the emulator. The property: every
planned write is a value a person sees in the visible sheet, on the row of the entity it writes; every
change a person sees is planned or its row (or the file) is refused with a reason; nothing else is."""

from __future__ import annotations

import csv
import io
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import xlsxwriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.scale import DEMO_TENANT_ID
from models.hr.plan import Plan
from models.users import UpdateUserEntities
from pipelines.clients import AdmClientResource
from pipelines.hr.demo_export import USER_EXTRA, USER_FIELDS_ORDER, Row
from pipelines.hr.mapping import CsvOptions, Mapping
from pipelines.hr.workflow import PlanOutcome, refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_support import MAPPING, SETTINGS, client_of, group_id, plan, user_id, user_rows

pytest_plugins = ["tests.test_hr_support"]

HEADER = [MAPPING.users.columns[name] for name in USER_FIELDS_ORDER] + [USER_EXTRA]
ORDER = (*USER_FIELDS_ORDER, USER_EXTRA)
ROWS = 40
"""Rows per file: the seeded tenant's first employees, a few of them changed (few enough refused rows
stay under the invalid share that refuses a whole upload)."""
ZEROS = ("E100013", "00123")
"""An employee whose id in the service has leading zeros (set by the test over HTTP)."""
NAMES = ("Okafor", "Lindqvist", "Brontë", "O\u2019Neil")
"""New last names: outside ASCII too, all cp1252-encodable (the right quote is C1 0x92 read as latin-1)."""
ACTIONS = ("rename", "formula", "merged_names", "merged_department")
CSV_FORMS = (("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16", b""), ("cp1252", b""))
"""(codec, BOM written before it): Python's utf-16 codec writes its own BOM."""


@dataclass
class Drawn:
    """One drawn file and what a person sees in it."""

    path: Path
    setting: str
    last_names: dict[str, str] = field(default_factory=dict)
    """Employee id -> the last name a person sees, where it differs from the service's."""
    departments: dict[str, str] = field(default_factory=dict)
    """Employee id -> the department a person sees, where it differs from the service's."""
    refused: set[str] = field(default_factory=set)
    """Employee ids whose row must be refused (what it shows cannot be read, or is an id Excel changed)."""


@pytest.fixture
def zeros_store(hr_store: WarehouseResource, adm: AdmClientResource) -> WarehouseResource:
    """The test's warehouse after the service gave one employee an id with leading zeros."""
    with client_of(adm) as client:
        body = UpdateUserEntities(tenant_id=DEMO_TENANT_ID, employee_id=ZEROS[1])
        client.update_user_entities(user_id(ZEROS[0]), body)
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    return hr_store


def seeded() -> list[Row]:
    rows = user_rows()[:ROWS]
    assert any(row["employee_id"] == ZEROS[0] for row in rows)
    for row in rows:
        row["employee_id"] = ZEROS[1] if row["employee_id"] == ZEROS[0] else row["employee_id"]
    return rows


changes_drawn = st.dictionaries(
    st.integers(min_value=1, max_value=ROWS // 2 - 1).map(lambda index: index * 2),
    st.tuples(st.sampled_from(ACTIONS), st.sampled_from(NAMES)),
    max_size=3,
)
"""Even row indices (a merged department takes the row after too) -> what happens there."""


@st.composite
def drawn_files(draw: st.DrawFn) -> Drawn:
    rows = seeded()
    actions = draw(changes_drawn)
    folder = Path(tempfile.mkdtemp(prefix="hr-generative-"))
    if draw(st.booleans()):
        saved = draw(st.booleans())  # saved by Excel (values kept) or by a script (recalculated on open)
        numeric = draw(st.booleans())
        return _workbook(folder, rows, actions, draw(st.booleans()), saved, numeric, draw(st.booleans()))
    codec, bom = draw(st.sampled_from(CSV_FORMS))
    setting = draw(st.sampled_from((codec, "utf-8", "latin-1")))
    return _csv(folder, rows, actions, codec, bom, setting, draw(st.booleans()))


def _csv(
    folder: Path,
    rows: list[Row],
    actions: dict[int, tuple[str, str]],
    codec: str,
    bom: bytes,
    setting: str,
    total: bool,
) -> Drawn:
    drawn = Drawn(folder / "users.csv", setting)
    for index, (_, name) in actions.items():  # a CSV shows text: every change is a plain rename
        drawn.last_names[rows[index]["employee_id"]] = name
        rows[index]["last_name"] = name
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerows([HEADER, *([row.get(name, "") for name in ORDER] for row in rows)])
    if total:
        writer.writerow([f"Total: {len(rows)} workers"])
    drawn.path.write_bytes(bom + text.getvalue().encode(codec))
    return drawn


def _workbook(
    folder: Path,
    rows: list[Row],
    actions: dict[int, tuple[str, str]],
    hidden_sheet: bool,
    saved: bool,
    numeric: bool,
    total: bool,
) -> Drawn:
    drawn = Drawn(folder / "users.xlsx", "utf-8")
    workbook = xlsxwriter.Workbook(str(drawn.path))
    if hidden_sheet:  # an old copy with other names, hidden: nothing of it is seen
        old = workbook.add_worksheet("Old copy")
        old.write_row(0, 0, HEADER)
        for number, row in enumerate(rows, start=1):
            old.write_row(number, 0, [*(row.get(name, "") for name in ORDER)])
            old.write_string(number, ORDER.index("last_name"), "Hidden")
        old.hide()
    sheet = workbook.add_worksheet("Workers")
    sheet.activate()
    sheet.write_row(0, 0, HEADER)
    for number, row in enumerate(rows, start=1):
        for column, name in enumerate(ORDER):
            sheet.write_string(number, column, row.get(name, ""))
    zeros = next(number for number, row in enumerate(rows, start=1) if row["employee_id"] == ZEROS[1])
    if numeric:  # Excel made the id a number: 00123 shows as 123
        sheet.write_number(zeros, ORDER.index("employee_id"), int(ZEROS[1]))
        drawn.refused.add(str(int(ZEROS[1])))  # the row shows 123
    for index, (action, name) in actions.items():
        _act(sheet, drawn, rows, index, action, name, saved)
    if total:
        sheet.write_string(len(rows) + 1, 0, f"Total: {len(rows)} workers")
    workbook.close()
    if saved:
        _saved_by_excel(drawn.path)
    return drawn


def _act(
    sheet: xlsxwriter.worksheet.Worksheet,
    drawn: Drawn,
    rows: list[Row],
    index: int,
    action: str,
    name: str,
    saved: bool,
) -> None:
    """Change row ``index`` (sheet row ``index + 1``) as ``action`` says; record what a person sees."""
    key, line = rows[index]["employee_id"], index + 1
    last, first = ORDER.index("last_name"), ORDER.index("first_name")
    if action == "rename":
        sheet.write_string(line, last, name)
        drawn.last_names[key] = name
    elif action == "formula":
        sheet.write_formula(line, last, f'="{name}"', None, name)
        if saved:
            drawn.last_names[key] = name
        else:
            drawn.refused.add(key)
    elif action == "merged_names":  # first and last name over two columns: which is which is unknown
        sheet.merge_range(line, first, line, last, f"{rows[index]['first_name']} {name}")
        drawn.refused.add(key)
    else:  # a department merged over this row and the next: both rows show it
        groups = ORDER.index("groups")
        target = "ORG-0023" if rows[index]["groups"] != "ORG-0023" else "ORG-0025"
        sheet.merge_range(line, groups, line + 1, groups, target)
        for row in rows[index : index + 2]:
            if row["groups"] != target:
                drawn.departments[row["employee_id"]] = target


def _saved_by_excel(path: Path) -> None:
    """The workbook as Excel saves it: without XlsxWriter's request to recalculate every formula on open
    (its saved values are then what Excel shows)."""
    copy = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/workbook.xml":
                data = re.sub(rb'\s*fullCalcOnLoad="1"', b"", data)
            target.writestr(item, data)
    shutil.move(copy, path)


def planned(made: Plan) -> dict[tuple[str, str], str]:
    return {
        (entity.hr_key, change.field): str(change.after)
        for entity in made.entities
        for change in entity.changes
    }


def check_property(outcome: PlanOutcome, drawn: Drawn) -> None:
    """Every planned write is seen on its entity's row; every seen change is planned or refused with a
    reason; the rows that must be refused are."""
    problems = outcome.validation.problems
    if outcome.plan is None:
        assert outcome.refusal and problems, "a file not planned says why"
        return
    lines = {row.key: row.line for row in outcome.validation.rows}
    refused = {row.key for row in outcome.validation.rows if not row.valid}
    made = planned(outcome.plan)
    for (key, name), after in made.items():
        if name == "last_name":
            assert drawn.last_names.get(key) == after, (key, after)
        elif name == "display_name":  # written with a renamed person's seen names
            assert key in drawn.last_names and after.endswith(drawn.last_names[key]), (key, after)
        elif name == "groups":
            assert key in drawn.departments and group_id(drawn.departments[key]) in after, (key, after)
        else:
            raise AssertionError(f"{key}: {name} -> {after} is seen nowhere")
    for key in drawn.refused:
        assert key in refused or key not in lines, f"{key} shows what cannot be read, yet was not refused"
        assert not any(planned_key == key for planned_key, _ in made)
    for key in drawn.last_names:
        assert (key, "last_name") in made or key in refused, (
            f"{key}: a rename seen and neither planned nor refused"
        )
    for key in drawn.departments:
        assert (key, "groups") in made or key in refused, (
            f"{key}: a transfer seen and neither planned nor refused"
        )


GENERATIVE = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@GENERATIVE
@given(drawn=drawn_files())
def test_every_planned_write_is_seen_in_the_visible_file_or_refused_with_a_reason(
    zeros_store: WarehouseResource, drawn: Drawn
) -> None:
    options = CsvOptions.model_validate({**MAPPING.csv.model_dump(), "encoding": drawn.setting})
    mapping: Mapping = MAPPING.model_copy(update={"csv": options})
    check_property(plan(zeros_store, drawn.path, mapping=mapping), drawn)
