"""Every CSV the product writes escapes cells a spreadsheet would run as formulas the same way
(`pipelines.csv_cells.safe_cell`), header cells included: here ``authority-sync sql --format csv`` over a
real DuckDB file (the HR error report's header: tests/test_hr_text.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.csv_cells import phone_cell, safe_cell, write_table

HOSTILE = ['=HYPERLINK("http://evil.example","x")', "+cmd", "-2+3", "@SUM(1+1)", "\tTab", "\rCR", " =1+1"]
"""Cells starting with each formula character (and one behind a space)."""


def test_sql_as_csv_escapes_formula_cells_in_the_header_and_the_data_but_not_numbers(tmp_path: Path) -> None:
    copy = tmp_path / "copy.duckdb"
    with duckdb.connect(str(copy)) as con:
        con.execute("CREATE TABLE hostile (cell VARCHAR, amount INTEGER, ratio DECIMAL(4, 2))")
        con.executemany("INSERT INTO hostile VALUES (?, -5, -0.25)", [[cell] for cell in HOSTILE])
    names = [name.replace('"', '""') for name in HOSTILE]
    columns = ", ".join(f'cell AS "{name}"' for name in names)
    query = f"SELECT {columns}, amount, ratio, [cell] AS listed FROM hostile ORDER BY rowid"  # noqa: S608

    result = CliRunner().invoke(app, ["sql", query, "--copy", str(copy), "--format", "csv"])

    assert result.exit_code == 0, result.output
    header, *rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert header == [*(f"'{name}" for name in HOSTILE), "amount", "ratio", "listed"]
    expected = [[*[f"'{cell}"] * len(HOSTILE), "-5", "-0.25", json.dumps([cell])] for cell in HOSTILE]
    assert rows == expected


def test_one_rule_escapes_each_formula_character_as_written_or_behind_spaces_but_phone_numbers() -> None:
    assert [safe_cell(cell) for cell in HOSTILE] == [f"'{cell}" for cell in HOSTILE]
    out = io.StringIO()
    phones = [phone_cell("+1 555 0100"), phone_cell("+1 (555)=cmd"), "+1 555 0100"]
    write_table(out, ["\tMobile"], [[cell] for cell in phones])
    written = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    # An international number in a phone column is no formula; elsewhere it is escaped like any "+" cell.
    assert written == [["'\tMobile"], ["+1 555 0100"], ["'+1 (555)=cmd"], ["'+1 555 0100"]]
    assert [safe_cell(cell) for cell in ("Ana", "O'Brien", "1+1", "")] == ["Ana", "O'Brien", "1+1", ""]
