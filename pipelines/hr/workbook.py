"""Reading an .xlsx workbook as HR sees it in Excel: the sheet a person sees, each cell as shown.

**The sheet.** The one visible worksheet is read. A workbook with several visible worksheets (or none)
is refused naming them (rule ``sheet_choice``): which one HR meant cannot be told, and a hidden sheet (an
old copy kept in the file) is never read.

**Cells as shown.** Whole numbers without a decimal point (an id ``123``, not ``123.0``),
``TRUE``/``FALSE``; cells typed as dates are kept as dates too (`CsvRow.dates`). A formula cell gives the
value Excel last computed and saved. A formula saved without that value (files written by scripts), or
in a workbook that asks to be recalculated when opened (its saved values are then not what Excel shows),
is refused in its cell (``formula_without_value``), never read as blank.

**Merged cells.** A merged range shows one value over its cells. A range within one column of the data
rows (a department merged over the rows of its people) fills each of its cells with that value, as a
person reads it. Any other range (over several columns, or over the header) is refused in each of its
data cells (``merged_cells``, naming the range): which column or row its value belongs to cannot be told.

**Hidden columns and rows.** A hidden column is kept in `CsvFile.hidden_columns` (validation refuses the
file when the mapping reads one: its values would be written unseen); a hidden row (filtered out, or
hidden by hand) is refused in whole (``hidden_row``).

Per-cell problems are problems of the file naming the row and column; validation attaches those of the
mapped columns to their rows (`pipelines.hr.validate`). The sheet is parsed with openpyxl's own
worksheet parser in streaming mode (``read_only``), which also yields the merged ranges, the column and
row dimensions and whether a formula cell holds a saved value.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from datetime import date, datetime, time
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from openpyxl import load_workbook
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet._reader import FORMULA_TAG, VALUE_TAG, WorkSheetParser
from openpyxl.worksheet.cell_range import CellRange

from pipelines.hr.csv_input import CsvFile, CsvRow, column_key, column_positions, header_names
from pipelines.hr.problems import Problem

Cell = object
"""What openpyxl gives for a cell: text, a number, a bool, a date or time, rich text, None."""
SHEET_RULE = "sheet_choice"
FORMULA_RULE = "formula_without_value"
MERGED_RULE = "merged_cells"
HIDDEN_ROW_RULE = "hidden_row"


class _Parser(WorkSheetParser):
    """openpyxl's worksheet parser (values only), keeping where the formula cells are and which of them
    were saved without their value (read as empty otherwise)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.formulas: set[tuple[int, int]] = set()
        self.unsaved: set[tuple[int, int]] = set()

    def parse_cell(self, element: Element) -> dict[str, Any]:
        cell: dict[str, Any] = super().parse_cell(element)
        if element.find(FORMULA_TAG) is not None:
            self.formulas.add((cell["row"], cell["column"]))
            # No value, or an empty one that is no computed text (``t="str"`` with ``<v></v>`` is "").
            if not element.findtext(VALUE_TAG) and element.get("t") != "str":
                self.unsaved.add((cell["row"], cell["column"]))
        return cell


@dataclass
class _Sheet:
    """A sheet's rows as parsed (row number -> values by column, from 1), and what the parser found."""

    rows: dict[int, dict[int, Cell]] = field(default_factory=dict)
    merged: list[str] = field(default_factory=list)
    formulas: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) of each formula cell."""
    unsaved: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) of each formula cell saved without its value."""
    hidden_columns: set[int] = field(default_factory=set)
    hidden_rows: set[int] = field(default_factory=set)


def read_workbook(path: Path, data: bytes, digest: str) -> CsvFile:
    """The visible worksheet of an .xlsx workbook as rows; one problem of the whole file when it is not a
    readable workbook (a zip of something else, a file cut short) or its sheet cannot be told."""
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, ValueError) as error:
        message = f"not a readable .xlsx workbook ({error or type(error).__name__})"
        return CsvFile(path, digest, problems=[Problem(str(path), 0, "", "unreadable", message)])
    try:
        visible = [sheet for sheet in workbook.worksheets if sheet.sheet_state == "visible"]
        if len(visible) != 1:
            return CsvFile(path, digest, problems=[_sheet_problem(path, workbook)])
        sheet = _parse(workbook, visible[0])
    finally:
        workbook.close()
    calculation = workbook.calculation
    return _as_file(path, digest, sheet, bool(calculation is not None and calculation.fullCalcOnLoad))


def _sheet_problem(path: Path, workbook: Workbook) -> Problem:
    shown = ", ".join(f"{sheet.title!r} ({sheet.sheet_state})" for sheet in workbook.worksheets)
    message = (
        f"the workbook must show exactly one worksheet, the one to upload; it holds {shown}: hide or "
        "delete the others, or save that sheet as CSV"
    )
    return Problem(str(path), 0, "", SHEET_RULE, message)


def _parse(workbook: Workbook, sheet: Any) -> _Sheet:
    """Every row of ``sheet`` with openpyxl's parser, as its read-only worksheet would read them."""
    found = _Sheet()
    # The read-only worksheet's own source and the workbook's parsing settings (openpyxl keeps them
    # private): its public row iterator hides the formula cells without a value and the merged ranges.
    with sheet._get_source() as source:
        parser = _Parser(
            source,
            sheet._shared_strings,
            data_only=True,
            epoch=workbook.epoch,
            date_formats=workbook._date_formats,  # type: ignore[attr-defined]
            timedelta_formats=workbook._timedelta_formats,  # type: ignore[attr-defined]
        )
        for number, cells in parser.parse():
            found.rows[number] = {
                cell["column"]: cell["value"] for cell in cells if cell["value"] is not None
            }
        found.formulas, found.unsaved = parser.formulas, parser.unsaved
        if parser.merged_cells is not None:
            found.merged = [str(merge.ref) for merge in parser.merged_cells.mergeCell]
        found.hidden_columns = {
            column
            for attributes in parser.column_dimensions.values()
            if _true(attributes.get("hidden"))
            for column in range(int(attributes["min"]), int(attributes["max"]) + 1)
        }
        found.hidden_rows = {
            int(number)
            for number, attributes in parser.row_dimensions.items()
            if _true(attributes.get("hidden"))
        }
    return found


def _true(flag: str | None) -> bool:
    return flag in ("1", "true")


def _as_file(path: Path, digest: str, sheet: _Sheet, recalculated: bool) -> CsvFile:
    """The sheet as a file: its first row the header, then each row that holds a cell or a formula."""
    header_row = sheet.rows.get(1, {})
    header = header_names(
        [text(header_row.get(column)) for column in range(1, max(header_row, default=0) + 1)]
    )
    if not any(header):
        return CsvFile(path, digest, problems=[Problem(str(path), 0, "", "empty_file", "no header row")])
    problems = _merge(path, sheet, header)
    unshown: dict[int, list[int]] = {}
    for row, column in sorted(sheet.formulas if recalculated else sheet.unsaved):
        unshown.setdefault(row, []).append(column)
    keys = [column_key(name) for name in header]
    positions = column_positions(header)
    found: list[CsvRow] = []
    for line in sorted(number for number in {*sheet.rows, *unshown} if number > 1):
        values = sheet.rows.get(line, {})
        if not any(text(value).strip() for value in values.values()) and line not in unshown:
            continue
        problems += _row_problems(path, line, values, header, line in sheet.hidden_rows)
        problems += [_formula_problem(path, line, column, header, sheet) for column in unshown.get(line, [])]
        cells = [text(values.get(column)) for column in range(1, max(len(header), *values, 0) + 1)]
        dates = {key: day for column, key in enumerate(keys, start=1) if (day := _day(values.get(column)))}
        found.append(CsvRow(line, cells, positions, dates))
    hidden = [header[column - 1] for column in sorted(sheet.hidden_columns) if column <= len(header)]
    return CsvFile(path, digest, header, found, problems, hidden_columns=[name for name in hidden if name])


def _row_problems(
    path: Path, line: int, values: dict[int, Cell], header: list[str], hidden: bool
) -> list[Problem]:
    """A row with cells beyond the header's columns, or hidden."""
    problems = []
    if any(text(value).strip() for column, value in values.items() if column > len(header)):
        message = f"cells beyond the header's {len(header)} columns"
        problems.append(Problem(str(path), line, "", "field_count", message))
    if hidden:
        message = "the row is hidden in the workbook: show it (or delete it) and save again"
        problems.append(Problem(str(path), line, "", HIDDEN_ROW_RULE, message))
    return problems


def _formula_problem(path: Path, line: int, column: int, header: list[str], sheet: _Sheet) -> Problem:
    """A formula cell whose shown value is not in the file: saved without it, or in a workbook
    recalculated when opened (what it saved is then not what Excel shows)."""
    why = (
        "a formula saved without its value (a file written by a script)"
        if (line, column) in sheet.unsaved
        else "a formula in a workbook recalculated when opened (its saved value may not be what Excel shows)"
    )
    name = header[column - 1] if column <= len(header) else ""
    return Problem(
        str(path), line, name, FORMULA_RULE, f"{why}: open the file in Excel and save it, or export values"
    )


def _merge(path: Path, sheet: _Sheet, header: list[str]) -> list[Problem]:
    """Fill the merged ranges that lie in one column of the data rows; the problems of the others (one per
    data cell)."""
    problems = []
    for ref in sheet.merged:
        merged = CellRange(ref)
        first_column, first_row, last_column, last_row = (
            merged.min_col,
            merged.min_row,
            merged.max_col,
            merged.max_row,
        )
        value = sheet.rows.get(first_row, {}).get(first_column)
        if first_column == last_column and first_row > 1:
            for line in range(first_row + 1, last_row + 1):
                sheet.rows.setdefault(line, {})[first_column] = value
            continue
        for line in range(max(first_row, 2), last_row + 1):
            for column in range(first_column, last_column + 1):
                name = header[column - 1] if column <= len(header) else ""
                message = f"in the merged range {ref}, over several columns or the header: unmerge it"
                problems.append(Problem(str(path), line, name, MERGED_RULE, message))
    return problems


def text(cell: Cell) -> str:
    """A cell as Excel shows it in a plain cell: whole numbers without ``.0``, dates as ISO text."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "TRUE" if cell else "FALSE"
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    if isinstance(cell, datetime):
        return cell.date().isoformat() if cell.time() == time() else cell.isoformat(sep=" ")
    if isinstance(cell, date | time):
        return cell.isoformat()
    return str(cell)


def _day(cell: Cell) -> date | None:
    """The date of a cell the workbook typed as a date (or a date and time)."""
    if isinstance(cell, datetime):
        return cell.date()
    return cell if isinstance(cell, date) else None
