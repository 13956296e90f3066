"""HR files read exactly as they were written, for any cell content: properties over what Python's csv
module, pandas and an Excel writer (XlsxWriter) produce, with every delimiter, line end (CRLF, LF, CR
alone), quoting, encoding, BOM and Unicode form; an unclosed quote anywhere refuses the file at the line
where its cell began; dates in either day/month order are never read swapped. The writers here are other
libraries', so the reader is never checked against itself; expected line numbers are counted from the
written cells with a regular expression of their own."""

from __future__ import annotations

import csv
import io
import re
import tempfile
import unicodedata
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import pandas as pd
import pytest
import xlsxwriter
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openpyxl.utils.datetime import to_excel

from pipelines.hr.csv_input import CsvFile
from pipelines.hr.dates import parse_date
from pipelines.hr.mapping import CsvOptions, Mapping
from pipelines.hr.upload import read_upload
from pipelines.hr.validate import validate
from tests.test_hr_support import MAPPING, row_of, seeded_snapshot, user_rows, write_users

pytest_plugins = ["tests.test_hr_support"]

HEADER = ["Employee ID", "Preferred Name", "Notes"]
"""Columns as an HR export names them (literal: not derived from the mapping under test)."""
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BREAKS = re.compile(r"\r\n|\r|\n")
TODAY = date(2026, 2, 1)

ids = st.from_regex(r"E[0-9]{3,6}", fullmatch=True)
SURROGATES: tuple[Literal["Cs"], ...] = ("Cs",)
CONTROLS: tuple[Literal["Cs", "Cc"], ...] = ("Cs", "Cc")
text = st.text(st.characters(exclude_categories=SURROGATES, exclude_characters="\x00"), max_size=12)
"""Any cell content: quotes, delimiters, CR, LF, a BOM character, combining marks (NFD), emoji."""
OTHER_BREAK = {"\n": "\r", "\r": "\n", "\r\n": None}
"""Per line end, the line break the csv module and pandas write unquoted inside a cell (they quote only
the characters of their own line end): such a file is no valid CSV, and no reader can tell that break
from the end of the row. With CRLF every break is quoted."""
to_serial: Callable[[datetime], float] = to_excel
"""openpyxl's date-to-serial conversion (untyped there)."""


def faithful(rows: list[tuple[str, ...]], terminator: str) -> bool:
    """Whether a writer with this line end quotes every line break of ``rows`` (see `OTHER_BREAK`)."""
    other = OTHER_BREAK[terminator]
    return other is None or not any(other in cell for row in rows for cell in row)


records = st.lists(st.tuples(ids, text, text), min_size=1, max_size=6)


def scratch(name: str) -> Path:
    """A fresh file path for one example (hypothesis runs many examples in one test)."""
    return Path(tempfile.mkdtemp(prefix="hr-reading-")) / name


def physical_lines(rows: list[tuple[str, ...]]) -> list[int]:
    """The line each record starts on: the header is line 1; a record takes one line plus the line
    breaks inside its cells."""
    lines, line = [], 2
    for row in rows:
        lines.append(line)
        line += 1 + sum(len(BREAKS.findall(cell)) for cell in row)
    return lines


def assert_read_back(file: CsvFile, rows: list[tuple[str, ...]], lines: list[int]) -> None:
    assert file.problems == [], file.problems
    assert file.header == HEADER
    assert [tuple(row.cells) for row in file.rows] == rows
    assert [row.line for row in file.rows] == lines


@PROPERTY
@given(
    rows=records,
    delimiter=st.sampled_from([",", ";", "\t"]),
    terminator=st.sampled_from(["\r\n", "\n", "\r"]),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "cp1252"]),
)
def test_any_cell_written_by_the_csv_module_reads_back_on_its_line(
    rows: list[tuple[str, ...]],
    delimiter: str,
    terminator: str,
    quoting: Literal[0, 1, 2, 3],
    encoding: str,
) -> None:
    assume(faithful(rows, terminator))
    if encoding == "cp1252":
        assume(all(cell.encode("cp1252", "ignore").decode("cp1252") == cell for row in rows for cell in row))
    path = scratch("users.csv")
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter, lineterminator=terminator, quoting=quoting)
        writer.writerows([HEADER, *rows])
    # The delimiter is detected; a BOM is honoured whatever the setting.
    file = read_upload(path, "cp1252" if encoding == "cp1252" else "utf-8")
    assert_read_back(file, rows, physical_lines(rows))
    assert file.delimiter == delimiter


@PROPERTY
@given(
    rows=records,
    delimiter=st.sampled_from([",", ";"]),
    terminator=st.sampled_from(["\r\n", "\n"]),
)
def test_any_cell_written_by_pandas_reads_back_on_its_line(
    rows: list[tuple[str, ...]], delimiter: str, terminator: str
) -> None:
    assume(faithful(rows, terminator))
    path = scratch("users.csv")
    frame = pd.DataFrame(rows, columns=HEADER, dtype=object)
    frame.to_csv(path, index=False, sep=delimiter, lineterminator=terminator, encoding="utf-8")
    assert_read_back(read_upload(path), rows, physical_lines(rows))


excel_text = st.text(
    st.characters(exclude_categories=CONTROLS, include_characters="\n\t"), max_size=12
).filter(lambda cell: "_x" not in cell.casefold())
"""What an Excel cell holds: no control characters but line breaks and tabs (the XML of a workbook
cannot), and no ``_xHHHH_`` (the format's own escape)."""


@PROPERTY
@given(
    rows=st.lists(st.tuples(ids, excel_text, excel_text), min_size=1, max_size=6),
    gaps=st.lists(st.integers(0, 2), min_size=6, max_size=6),
    hired=st.lists(st.dates(date(1930, 1, 1), date(2099, 12, 31)), min_size=6, max_size=6),
)
def test_any_workbook_reads_back_with_sheet_row_numbers_and_typed_dates(
    rows: list[tuple[str, ...]], gaps: list[int], hired: list[date]
) -> None:
    path = scratch("users.xlsx")
    workbook = xlsxwriter.Workbook(str(path))
    sheet = workbook.add_worksheet("Export")
    day = workbook.add_format({"num_format": "dd/mm/yyyy"})
    for column, name in enumerate([*HEADER, "Hire Date"]):
        sheet.write_string(0, column, name)
    index, lines = 0, []
    for number, row in enumerate(rows):
        index += 1 + gaps[number]  # blank rows between, as people leave them
        lines.append(index + 1)
        for column, cell in enumerate(row):
            sheet.write_string(index, column, cell)
        sheet.write_datetime(index, len(row), datetime.combine(hired[number], datetime.min.time()), day)
    workbook.close()

    file = read_upload(path)
    assert file.problems == [] and file.header == [*HEADER, "Hire Date"]
    assert [tuple(row.cells[:3]) for row in file.rows] == rows
    assert [row.line for row in file.rows] == lines
    assert [row.dates["hire date"] for row in file.rows] == hired[: len(rows)]


plain = st.text(st.characters(codec="ascii", categories=("L", "N", "Zs")), max_size=10)
"""Cells a writer never quotes: no delimiter, quote or line break."""


@PROPERTY
@given(
    before=records,
    after=st.lists(st.tuples(ids, plain, plain), max_size=5),
    stray=st.tuples(ids, plain, plain),
    column=st.integers(0, 2),
    terminator=st.sampled_from(["\r\n", "\n", "\r"]),
)
def test_an_unclosed_quote_refuses_the_file_at_the_line_where_its_cell_began(
    before: list[tuple[str, ...]],
    after: list[tuple[str, ...]],
    stray: tuple[str, ...],
    column: int,
    terminator: str,
) -> None:
    head, tail = io.StringIO(newline=""), io.StringIO(newline="")
    csv.writer(head, lineterminator=terminator).writerows([HEADER, *before])
    csv.writer(tail, lineterminator=terminator).writerows(after)
    cells = list(stray)
    cells[column] = '"' + cells[column]  # a stray quote opens a cell that nothing closes
    path = scratch("users.csv")
    path.write_bytes((head.getvalue() + ",".join(cells) + terminator + tail.getvalue()).encode())
    expected = len(BREAKS.findall(head.getvalue())) + 1  # the stray row's line

    file = read_upload(path)
    assert file.rows == []
    assert [(problem.line, problem.rule) for problem in file.problems] == [(expected, "csv_syntax")]


@settings(max_examples=200, deadline=None)
@given(day=st.dates(date(1930, 1, 1), date(2099, 12, 31)), fraction=st.sampled_from(["", ".0", ".5", ".75"]))
def test_an_excel_serial_number_reads_as_its_date(day: date, fraction: str) -> None:
    serial = int(to_serial(datetime.combine(day, datetime.min.time())))
    assert parse_date(f"{serial}{fraction}", ("%d/%m/%Y",)) == day


_ZEROS = st.sampled_from([chr(code) for code in range(0x20000) if unicodedata.digit(chr(code), None) == 0])
"""The zero of each of Unicode's sets of decimal digits (ASCII, Arabic-Indic, Devanagari, fullwidth, ...;
none lies above U+20000): ``strptime`` reads only ASCII's."""


@st.composite
def _day_texts(draw: st.DrawFn) -> str:
    """Year-month-day texts: a real day, or up to four, two and two random digits (``strptime`` reads
    ``2024-1-5``), in ASCII or another script's digits."""
    text = draw(
        st.one_of(
            st.dates().map(date.isoformat),
            st.dates().map(lambda day: f"{day.year}-{day.month}-{day.day}"),
            st.from_regex(r"[0-9]{1,4}-[0-9]{1,2}-[0-9]{1,2}", fullmatch=True),
        )
    )
    zero = draw(st.one_of(st.just("0"), _ZEROS))
    return "".join(chr(ord(zero) + int(char)) if char.isdigit() else char for char in text)


@settings(max_examples=300, deadline=None)
@given(text=_day_texts(), time=st.sampled_from(["", " 00:00", "T12:30:00Z", "T08:00:00+02:00"]))
def test_a_year_month_day_cell_reads_as_strptime_reads_it(text: str, time: str) -> None:
    # ISO days take a shorter path than strptime: it must accept and refuse exactly what strptime does.
    try:
        expected: date | None = datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        expected = None
    assert parse_date(f"{text}{time}", ("%Y-%m-%d",)) == expected


def with_dates(formats: list[str], trust: bool = False) -> Mapping:
    """The default mapping reading dates with ``formats``."""
    options = CsvOptions.model_validate(
        MAPPING.csv.model_dump() | {"date_formats": formats, "trust_date_order": trust}
    )
    return MAPPING.model_copy(update={"csv": options})


@PROPERTY
@given(
    hired=st.lists(st.dates(date(1990, 1, 1), date(2030, 12, 31)), min_size=1, max_size=8),
    written=st.sampled_from(["%m/%d/%Y", "%d/%m/%Y"]),
    trust=st.booleans(),
)
def test_a_day_month_date_is_never_read_swapped(hired: list[date], written: str, trust: bool) -> None:
    rows = [row for row in user_rows() if row["status"] == "Active"][: len(hired)]
    for row, day in zip(rows, hired, strict=True):
        row["start_date"] = day.strftime(written)  # a US (or European) export, by the standard library
    path = write_users(scratch("users.csv"), rows)
    result = validate([read_upload(path)], with_dates(["%d/%m/%Y"], trust), seeded_snapshot(), TODAY)

    read = {row.key: row.desired.get("start_date") for row in result.rows}
    if result.file_problems:  # refused: one problem for the column, no row read at all
        assert [(p.line, p.column, p.rule) for p in result.file_problems] == [(1, "Hire Date", "date_order")]
        assert result.rows == []
        return
    # Accepted: every date is the one written, never its day and month exchanged; except where the
    # mapping said to trust its order and no value could show it wrong: then it is read as declared.
    declared = {
        row["employee_id"]: datetime.strptime(row["start_date"], "%d/%m/%Y").date().isoformat()
        for row in rows
    }
    proves_order = any(day.day > 12 for day in hired)
    expected = {row["employee_id"]: day.isoformat() for row, day in zip(rows, hired, strict=True)}
    assert read == (declared if trust and not proves_order else expected)
    all_ambiguous = all(day.day <= 12 and day.day != day.month for day in hired)
    assert not (written == "%m/%d/%Y" and proves_order) and (trust or not all_ambiguous)


def test_a_us_export_under_a_european_mapping_is_one_column_problem(tmp_path: Path) -> None:
    rows = [row for row in user_rows() if row["status"] == "Active"][:40]
    for number, row in enumerate(rows):
        row["start_date"] = f"{1 + number % 12:02}/{1 + number % 28:02}/2019"  # month first, as in the US
    result = validate(
        [read_upload(write_users(tmp_path / "users.csv", rows))],
        with_dates(["%d/%m/%Y"]),
        seeded_snapshot(),
        TODAY,
    )
    (problem,) = result.problems
    assert (problem.line, problem.column, problem.rule) == (1, "Hire Date", "date_order")
    assert "'01/13/2019' in Hire Date on line 14" in problem.message


def test_both_orders_of_one_pattern_in_one_list_are_refused() -> None:
    with pytest.raises(ValueError, match="both orders"):
        with_dates(["%d/%m/%Y", "%m/%d/%Y"])


def test_trailing_empty_header_cells_and_repeated_unmapped_columns_are_read(tmp_path: Path) -> None:
    rows = user_rows()
    path = write_users(tmp_path / "users.csv", [row_of(rows, "E100010")])
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    # A spreadsheet's save: two empty trailing header cells, and an unmapped column twice.
    lines = [f"{lines[0]};Note;Note;;", *(f"{line};a;b;;" for line in lines[1:])]
    path.write_text("\r".join(lines).replace(",", ";") + "\r", encoding="cp1252")
    result = validate([read_upload(path, "cp1252")], MAPPING, seeded_snapshot(), TODAY)
    assert result.problems == [] and [row.key for row in result.rows] == ["E100010"]


def test_a_mapped_column_named_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    header = ",".join(MAPPING.users.columns[name] for name in ("employee_id", "email", "email"))
    path.write_text(f"{header}\nE100010,a@acme.example.com,b@acme.example.com\n", encoding="utf-8")
    problems = validate([read_upload(path)], MAPPING, seeded_snapshot(), TODAY).problems
    missing = {p.column for p in problems if p.rule == "missing_column"}
    assert ("Work Email", "duplicate_column") in {(p.column, p.rule) for p in problems} and missing


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "Excel 97-2003 workbook"),
        (b"PK\x03\x04" + bytes(64), "not a readable .xlsx workbook"),
        (b"Employee ID\x00,Name\nE1,\x00\x01\n", "not a text file"),
    ],
)
def test_a_file_that_is_no_csv_nor_workbook_is_one_problem(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(content)
    # latin-1 decodes any byte: following an encoding advice must not end in a traceback either.
    (problem,) = read_upload(path, "latin-1").problems
    assert (problem.rule, message in problem.message) == ("unreadable", True)
