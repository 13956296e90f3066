"""HR exports as HR systems really write them: other encodings and delimiters, headers in another case,
dates with a time part, no tenant column; and what two rows of one person, or an email's case, do to a
plan. Validation runs on the in-memory view of the seeded tenant; plans run against a warehouse filled by
the real extract."""

from __future__ import annotations

import csv
import unicodedata
from datetime import date
from pathlib import Path

import pytest

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.hr.plan import Plan
from pipelines.clients import AdmClientResource
from pipelines.hr.demo_export import USER_FIELDS_ORDER, Row
from pipelines.hr.exports import write_error_reports
from pipelines.hr.mapping import SAMPLES, CsvOptions, Mapping, MappingError, load_mapping, with_file_options
from pipelines.hr.report import plan_markdown
from pipelines.hr.upload import read_upload
from pipelines.hr.validate import Validation, validate
from pipelines.hr.workflow import refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.conftest import loopback
from tests.test_hr_apply import adm_headers
from tests.test_hr_support import MAPPING, SETTINGS, plan, row_of, seeded_snapshot, user_id, user_rows

pytest_plugins = ["tests.test_hr_support"]

TODAY = date(2026, 2, 1)
NAMES = {"E100010": ("Zoë", "Müller"), "E100011": ("José", "Brontë-Sø")}
"""New names with characters outside ASCII that cp1252 and latin-1 can encode."""
HEADER = [MAPPING.users.columns[name] for name in USER_FIELDS_ORDER]


def export(
    path: Path,
    rows: list[Row],
    encoding: str = "utf-8",
    delimiter: str = ",",
    header: list[str] | None = None,
    fields: tuple[str, ...] = USER_FIELDS_ORDER,
) -> Path:
    """A users export written with ``encoding`` and ``delimiter`` (quoted only where needed)."""
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(header or [MAPPING.users.columns[name] for name in fields])
        writer.writerows([row.get(name, "") for name in fields] for row in rows)
    return path


def renamed_rows() -> list[Row]:
    """Three seeded employees, the first two renamed to `NAMES`."""
    rows = user_rows()
    for key, (first, last) in NAMES.items():
        row_of(rows, key).update(first_name=first, last_name=last)
    return [row_of(rows, key) for key in ("E100010", "E100011", "E100012")]


def with_csv(**options: str | None) -> Mapping:
    """The default mapping with other ``[csv]`` options."""
    return MAPPING.model_copy(
        update={"csv": CsvOptions.model_validate({**MAPPING.csv.model_dump(), **options})}
    )


def check(path: Path, mapping: Mapping = MAPPING) -> Validation:
    """Validate one file against the seeded tenant, read as the mapping says."""
    file = read_upload(path, mapping.csv.encoding, mapping.csv.delimiter)
    return validate([file], mapping, seeded_snapshot(), TODAY)


def planned_names(made: Plan) -> dict[tuple[str, str], str]:
    """(HR key, field) -> planned value of the name fields of a plan."""
    return {
        (entity.hr_key, change.field): str(change.after)
        for entity in made.entities
        for change in entity.changes
        if change.field in ("first_name", "last_name")
    }


EXPECTED = {
    (key, field): value
    for key, names in NAMES.items()
    for field, value in zip(("first_name", "last_name"), names, strict=True)
}


@pytest.mark.parametrize(
    ("encoding", "delimiter"), [("cp1252", ","), ("latin-1", ";"), ("utf-8", ";"), ("utf-8", "\t")]
)
def test_cp1252_latin1_semicolon_and_tab_exports_plan_correctly(
    hr_store: WarehouseResource, tmp_path: Path, encoding: str, delimiter: str
) -> None:
    path = export(tmp_path / "users.csv", renamed_rows(), encoding, delimiter)
    outcome = plan(hr_store, path, mapping=with_csv(encoding=encoding))
    assert outcome.validation.problems == []
    assert outcome.plan is not None
    assert planned_names(outcome.plan) == EXPECTED


def test_a_file_that_does_not_decode_names_the_line_and_the_option(tmp_path: Path) -> None:
    path = export(tmp_path / "users.csv", renamed_rows(), "cp1252")
    problems = check(path).problems
    assert [(p.line, p.rule) for p in problems] == [(2, "encoding")]
    assert "line 2 is not utf-8" in problems[0].message and "--encoding" in problems[0].message
    assert "\n" not in problems[0].message


def test_a_set_delimiter_is_used_as_given(tmp_path: Path) -> None:
    path = export(tmp_path / "users.csv", renamed_rows(), delimiter="|")
    assert check(path, with_csv(delimiter="|")).problems == []
    assert with_csv(delimiter="tab").csv.delimiter == "\t"


def test_headers_match_ignoring_case_and_surrounding_spaces(tmp_path: Path) -> None:
    header = [f"  {name.upper()} " for name in HEADER]
    result = check(export(tmp_path / "users.csv", renamed_rows(), header=header))
    assert result.problems == []
    assert [row.key for row in result.rows] == ["E100010", "E100011", "E100012"]
    assert result.rows[0].cells["first_name"] == "Zoë"


def test_an_unknown_header_says_which_columns_were_found(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    path.write_text("Personnel No|Given Name\nE100010|Ann\n", encoding="utf-8")
    problem = check(path).problems[0]
    assert problem.rule == "unknown_file_kind"
    assert "'Employee ID' (users) or 'Org Unit ID' (org units)" in problem.message
    assert "found 1 column(s): 'Personnel No|Given Name'" in problem.message


@pytest.mark.parametrize("suffix", [" 00:00:00", "T00:00:00", "T00:00:00Z", " 00:00", "T00:00:00.000+01:00"])
def test_dates_with_a_time_part_are_read(tmp_path: Path, suffix: str) -> None:
    rows = renamed_rows()
    rows[0].update(start_date=f"2019-03-31{suffix}")
    result = check(export(tmp_path / "users.csv", rows))
    assert result.problems == []
    assert result.rows[0].desired["start_date"] == "2019-03-31"


def test_the_tenant_column_is_optional(tmp_path: Path) -> None:
    fields = tuple(name for name in USER_FIELDS_ORDER if name != "tenant")
    result = check(export(tmp_path / "users.csv", renamed_rows(), fields=fields))
    assert result.problems == [] and len(result.rows) == 3


@pytest.mark.parametrize("kind", ["directory", "missing"])
def test_a_directory_or_a_missing_file_is_one_problem(tmp_path: Path, kind: str) -> None:
    path = tmp_path if kind == "directory" else tmp_path / "gone.csv"
    problems = check(path).problems
    assert [(p.line, p.rule) for p in problems] == [(0, "unreadable")]


def test_two_rows_resolving_to_one_user_are_a_named_problem_on_both(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    # One row finds E100010 by employee id (with a new email), the other by E100010's email.
    by_email = dict(row_of(rows, "E100010"), employee_id="E900001", first_name="Other")
    by_id = dict(row_of(rows, "E100010"), email="someone.new@acme.example.com")
    outcome = plan(hr_store, export(tmp_path / "users.csv", [row_of(rows, "E100011"), by_id, by_email]))
    found = {(p.line, p.column, p.rule) for p in outcome.validation.problems}
    # The second is someone else too: found by E100010's email, it names neither their id nor their name.
    assert found == {
        (3, "Employee ID", "duplicate_target"),
        (4, "Work Email", "duplicate_target"),
        (4, "Work Email", "identity_mismatch"),
    }
    assert outcome.plan is None and "ADM_HR_MAX_INVALID_SHARE" in str(outcome.refusal)


def test_an_email_differing_only_in_case_is_no_change(hr_store: WarehouseResource, tmp_path: Path) -> None:
    rows = renamed_rows()
    for row in rows:
        row["email"] = row["email"].upper()
    outcome = plan(hr_store, export(tmp_path / "users.csv", rows))
    assert outcome.validation.problems == []
    assert outcome.plan is not None
    fields = {change.field for entity in outcome.plan.entities for change in entity.changes}
    assert fields == {"first_name", "last_name", "display_name"}


def test_the_error_report_uploaded_again_does_not_bring_back_a_formula(tmp_path: Path) -> None:
    rows = renamed_rows()
    rows[0].update(first_name='=HYPERLINK("http://evil.example","Fix me")', email="broken")
    rows[1].update(email="also broken")
    # Headers in another case: the report must still know the phone column (a phone is never escaped).
    header = [name.lower() for name in HEADER]
    first = check(export(tmp_path / "users.csv", rows, header=header))
    (report,) = write_error_reports(first, MAPPING, tmp_path / "reports")
    again = {(p.line, p.column.casefold(), p.rule) for p in check(report).problems}
    assert (2, "first name", "escaped_formula") in again
    assert not {problem for problem in again if problem[1] == "mobile phone"}


def test_the_plan_markdown_says_how_many_rows_it_left_out(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    hires = [
        dict(renamed_rows()[2], employee_id=f"E9{number:05}", email=f"hire{number}@acme.example.com")
        for number in range(5)
    ]
    made = plan(hr_store, export(tmp_path / "users.csv", [*renamed_rows(), *hires])).plan
    assert made is not None
    text = plan_markdown(made, limit=2)
    assert "... and 4 more" in text  # four name changes and two display names, two shown
    assert "5 row(s) need creation: E900000, E900001\n\n... and 3 more" in text


def test_file_options_are_checked_where_they_are_set(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.toml"
    default = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    mapping.write_text(default.replace('encoding = "utf-8"', 'encoding = "klingon"'), encoding="utf-8")
    with pytest.raises(MappingError, match=r"csv\.encoding: unknown encoding 'klingon'"):
        load_mapping(mapping)
    with pytest.raises(MappingError, match="delimiter: a delimiter is one character or 'tab'"):
        with_file_options(MAPPING, None, ";;")
    options = with_file_options(MAPPING, "cp1252", "tab").csv
    assert (options.encoding, options.delimiter) == ("cp1252", "\t")


def test_a_quote_never_closed_is_refused_at_a_physical_line(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    # The open quote swallows the rest of the file into one cell, past the csv module's field limit.
    tail = "".join(f"E1{number:05},Ann\n" for number in range(20_000))
    path.write_text(f'{",".join(HEADER)}\nE100011,Bo\nE100010,"Ann\n{tail}', encoding="utf-8")
    problems = check(path).problems
    assert [p.rule for p in problems] == ["csv_syntax"]
    # Reading stopped past the field limit, far below; the problem names where the quoted cell began.
    assert problems[0].line == 3 and "field larger than field limit" in problems[0].message


def test_a_utf8_bom_wins_over_another_encoding_setting(tmp_path: Path) -> None:
    # The error report (UTF-8 with BOM) uploaded again alongside cp1252 exports keeps its accents.
    rows = renamed_rows()
    rows[0]["email"] = "broken"
    (report,) = write_error_reports(check(export(tmp_path / "users.csv", rows)), MAPPING, tmp_path / "out")
    result = check(report, with_csv(encoding="cp1252"))
    assert [row.cells.get("first_name") for row in result.rows] == ["Zoë"]


def test_a_name_in_another_unicode_form_is_no_change_and_is_written_composed(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    # The service holds "José" decomposed (typed on a Mac); HR's export has it composed, and back.
    decomposed, composed = unicodedata.normalize("NFD", "José"), unicodedata.normalize("NFC", "José")
    with loopback(base_url=server.base_url, headers=adm_headers()) as http:
        body = {"tenantId": DEMO_TENANT_ID, "firstName": decomposed}
        http.patch(f"/auth/v1/user/update-entities/{user_id('E100010')}", json=body).raise_for_status()
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    rows = renamed_rows()[:1]
    for form in (composed, decomposed):
        rows[0].update(first_name=form, last_name=row_of(user_rows(), "E100010")["last_name"])
        made = plan(hr_store, export(tmp_path / "users.csv", rows)).plan
        assert made is not None and made.entities == [], form  # the same name: nothing to write
    rows[0]["first_name"] = unicodedata.normalize("NFD", "Zoë")
    made = plan(hr_store, export(tmp_path / "users.csv", rows)).plan
    assert made is not None
    assert [(c.field, c.after) for c in made.entities[0].changes] == [("first_name", "Zoë")]
    assert made.entities[0].changes[0].after == unicodedata.normalize("NFC", "Zoë")


def test_the_error_report_uses_the_uploads_delimiter(tmp_path: Path) -> None:
    rows = renamed_rows()
    rows[0]["email"] = "broken"
    first = check(export(tmp_path / "users.csv", rows, delimiter=";"))
    (report,) = write_error_reports(first, MAPPING, tmp_path / "reports")
    header = report.read_text(encoding="utf-8-sig").splitlines()[0]
    assert header.split(";")[:2] == HEADER[:2] and "," not in header
