"""What the HR sync writes, as text, over real HTTP and DuckDB: no control character reaches the service
(a cell holding C1 controls, as a cp1252 export read as latin-1 does), and every cell of a CSV report the
product writes, its header included, is inert in a spreadsheet."""

from __future__ import annotations

import csv
from pathlib import Path

from emulator.server import EmulatorServer
from pipelines.hr.exports import write_error_reports
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_identity import service_user
from tests.test_hr_support import (
    MAPPING,
    plan,
    row_of,
    seeded_snapshot,
    user_id,
    user_rows,
    write_users,
    writes,
)

pytest_plugins = ["tests.test_hr_support"]


def test_control_characters_in_a_cell_are_refused_and_never_written(
    hr_store: WarehouseResource, tmp_path: Path, server: EmulatorServer
) -> None:
    # A cp1252 export read as latin-1 turns its quotes into C1 controls (U+0092, U+0093): before, they
    # passed every check and reached the service. A file's encoding is now proven first (an encoding
    # problem, tests/test_hr_workbooks.py); controls that arrive in a valid UTF-8 cell are refused here.
    rows = user_rows()
    row = row_of(rows, "E100070")
    row |= {"first_name": "Robert \u0093Bob\u0094", "last_name": "O\u0092Brien"}
    path = write_users(tmp_path / "u.csv", rows)
    outcome = plan(hr_store, path)
    line = 2 + rows.index(row)
    found = [(p.line, p.column, p.rule) for p in outcome.validation.problems]
    assert found == [(line, "First Name", "control_characters"), (line, "Last Name", "control_characters")]
    assert "U+0092" in outcome.validation.problems[1].message
    assert outcome.plan is not None and outcome.plan.entities == []
    assert writes(server) == {}
    assert service_user(server, "E100070") == seeded_snapshot().user_values[user_id("E100070")]


def test_an_error_reports_header_cells_are_escaped_like_its_data(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    rows = user_rows()
    row_of(rows, "E100080")["email"] = "broken"
    source = write_users(tmp_path / "u.csv", rows)
    with source.open(encoding="utf-8-sig", newline="") as handle:
        table = list(csv.reader(handle))
    hostile = ['=HYPERLINK("http://evil.example","x")', "@SUM(1+1)", "+cmd", "-2+3"]
    # Header names are read trimmed; a data cell is repeated as written: a leading tab or CR is a prefix.
    cells = ["\tTab", "\rCR", " =1", "fine"]
    path = tmp_path / "hostile.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(
            [[*line, *(hostile if index == 0 else cells)] for index, line in enumerate(table)]
        )
    outcome = plan(hr_store, path)
    (report,) = write_error_reports(outcome.validation, MAPPING, tmp_path / "reports")
    with report.open(encoding="utf-8-sig", newline="") as handle:
        header, invalid = list(csv.reader(handle))
    assert header[-6:-2] == [f"'{cell}" for cell in hostile]
    assert invalid[-6:-2] == ["'\tTab", "'\rCR", "' =1", "fine"]
    assert header[-2:] == ["hr_sync_line", "hr_sync_errors"]
