"""Reading HR CSV exports: a header row, quoted fields (which may span lines), the encoding, delimiter and
line ends HR's system writes (CRLF, LF, or CR alone as old Mac exports do). Parsing is strict: a quoted
cell that never closes refuses the file, naming the line where that cell began (leniently read, it would
swallow the rest of the file into one cell and drop every later row without a word).

The encoding is a setting (``[csv] encoding`` or ``--encoding``): UTF-8 with or without BOM by default,
``cp1252`` or ``latin-1`` (or any Python codec name) for exports of older HR systems; a BOM wins, and the
bytes must prove the reading right (`pipelines.hr.encodings`). The delimiter is
detected from the header line (comma, semicolon or tab, whichever splits it into the most columns; a comma
on a tie) unless set (``[csv] delimiter``, ``--delimiter``). Header names match the mapping ignoring case
and surrounding spaces.

The standard library's reader is used rather than pandas: it reports the physical line a record starts on
(``line_num``), and every problem must name the line HR's editor shows; pandas numbers records, so after a
quoted cell spanning lines every later line would be off, and it guesses types (an employee id ``00123``
read as a number). Workbooks are read in `pipelines.hr.upload`.

Each row keeps the physical line it starts on. Cells are kept exactly as read; trimming and checks happen
in `pipelines.hr.rows`. Writing CSV back (error reports, plans) goes through `pipelines.csv_cells`, so
nothing this tool writes can run as a formula when opened in a spreadsheet.
"""

from __future__ import annotations

import _csv
import csv
import hashlib
import io
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TextIO

from pipelines.csv_cells import write_table
from pipelines.hr.encodings import EncodingRefusedError, decode
from pipelines.hr.problems import Problem
from warehouse.files import PRIVATE_UMASK

DELIMITERS = (",", ";", "\t")
"""The delimiters detected, in order of preference on a tie."""
FILE_RULES = frozenset(
    {
        "unreadable",
        "encoding",
        "csv_syntax",
        "empty_file",
        "duplicate_column",
        "date_order",
        "stale_export",
        "sheet_choice",
        "hidden_column",
    }
)
"""Problems that refuse a whole file (the others are of one row)."""
LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""What ends a physical line, as the csv module reads a file: CRLF (Windows), LF, or CR alone (old Mac
exports)."""


def column_key(name: str) -> str:
    """How a header name is compared with the mapping's: case and surrounding spaces do not count."""
    return name.strip().casefold()


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One record: the physical line it starts on (a workbook's row number), its cells, and where each
    `column_key` of the header is among them (one dict shared by every row of a file: a 50,000-row file
    holds one, not 50,000). ``dates`` holds the cells a workbook typed as dates, by `column_key`: they are
    read as such, whatever the date formats say."""

    line: int
    cells: list[str]
    positions: dict[str, int]
    dates: dict[str, date] = field(default_factory=dict)

    def value(self, column: str) -> str | None:
        """The cell of ``column`` (matched as `column_key` does); None when the row has no such cell."""
        position = self.positions.get(column_key(column))
        return self.cells[position] if position is not None and position < len(self.cells) else None


@dataclass(frozen=True)
class CsvFile:
    """An HR file (CSV or workbook) as read: its hash, header, rows and the problems of the file as a
    whole or of a row's shape (a row with too few or too many cells). ``delimiter`` is the CSV's (None for
    a workbook): error reports are written with it, so they open as the upload did."""

    path: Path
    sha256: str
    header: list[str] = field(default_factory=list)
    rows: list[CsvRow] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    delimiter: str | None = None
    hidden_columns: list[str] = field(default_factory=list)
    """A workbook's header names of the columns hidden in Excel (their values would be read unseen)."""
    notes: list[Problem] = field(default_factory=list)
    """What reading left out, and why (a totals row): told to the person, refusing nothing."""

    @property
    def name(self) -> str:
        """How problems name the file."""
        return str(self.path)

    def has(self, column: str) -> bool:
        """Whether the header names ``column`` (ignoring case and surrounding spaces)."""
        return self.count(column) > 0

    def count(self, column: str) -> int:
        """How many header cells name ``column`` (ignoring case and surrounding spaces)."""
        return sum(1 for name in self.header if column_key(name) == column_key(column))

    @property
    def refused(self) -> list[Problem]:
        """The problems that make the whole file unusable."""
        return [problem for problem in self.problems if problem.rule in FILE_RULES]


def parse_csv(path: Path, data: bytes, encoding: str = "utf-8", delimiter: str | None = None) -> CsvFile:
    """The CSV file ``path`` whose content is ``data``, hashed (``delimiter`` None: detected). A file that
    cannot be decoded or parsed comes back with one problem of the whole file and no rows."""
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = decode(str(path), data, encoding)
    except EncodingRefusedError as refused:
        return CsvFile(path, digest, problems=[refused.problem])
    separator = delimiter or detect_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    try:
        return replace(_parse(path, digest, reader), delimiter=separator)
    except csv.Error as error:
        return CsvFile(path, digest, problems=[_syntax_problem(path, text, separator, reader, error)])


FOOTER_LABEL = re.compile(
    r"(?:grand\s+|sub\s*)?(?:totals?|sum|summe|gesamt|count|record\s+count|row\s+count|anzahl)\b"
    r"|end\s+of\s+(?:report|file|data)\b",
    re.IGNORECASE,
)
"""How a totals or footer row's first cell starts: ``Total: 300 workers``, ``Grand total``, ``Summe``,
``Record count``, ``End of report``."""
_NUMBER = re.compile(r"[-+]?[\d.,\s']+%?")
FOOTER_RULE = "footer_row"


def without_footers(file: CsvFile) -> CsvFile:
    """``file`` without its totals and footer rows, each told in a note. Such a row's first non-blank cell
    starts with a totals word (`FOOTER_LABEL`) and its other cells are blank or numbers (totals), so a
    person's row (whose email, title or dates are no numbers) is never taken for one."""
    footers = {row.line: label for row in file.rows if (label := _footer_label(row.cells))}
    if not footers:
        return file
    notes = [
        Problem(
            file.name, line, "", FOOTER_RULE, f"skipped: {label!r} is a totals or footer row, not a record"
        )
        for line, label in footers.items()
    ]
    return replace(
        file,
        rows=[row for row in file.rows if row.line not in footers],
        problems=[problem for problem in file.problems if problem.line not in footers],
        notes=[*file.notes, *notes],
    )


def _footer_label(cells: Sequence[str]) -> str | None:
    filled = [cell.strip() for cell in cells if cell.strip()]
    if not filled or not FOOTER_LABEL.match(filled[0]):
        return None
    return filled[0] if all(_NUMBER.fullmatch(cell) for cell in filled[1:]) else None


def read_bytes(path: Path) -> tuple[bytes, Problem | None]:
    """The file's bytes, or a problem of the whole file when it cannot be read."""
    try:
        return path.read_bytes(), None
    except OSError as error:
        return b"", Problem(str(path), 0, "", "unreadable", _os_reason(error))


def _os_reason(error: OSError) -> str:
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(error, FileNotFoundError):
        return "no such file"
    return error.strerror or str(error)


def detect_delimiter(text: str) -> str:
    """The delimiter of `DELIMITERS` that splits the header line into the most columns (the first on a
    tie, so a one-column file reads as comma-separated)."""
    first = LINE_BREAK.split(text, maxsplit=1)[0]
    widths = {candidate: len(next(csv.reader([first], delimiter=candidate), [])) for candidate in DELIMITERS}
    return max(DELIMITERS, key=lambda candidate: widths[candidate])


def _parse(path: Path, digest: str, reader: _csv.Reader) -> CsvFile:
    header = header_names(next(reader, []))
    positions = column_positions(header)
    problems = [] if any(header) else [Problem(str(path), 0, "", "empty_file", "no header row")]
    rows: list[CsvRow] = []
    while True:
        start = reader.line_num + 1
        cells = next(reader, None)
        if cells is None:
            break
        if not any(cell.strip() for cell in cells):
            continue
        # Empty cells past the header are what a trailing ";;" in every line leaves: no shape problem.
        if len(cells) < len(header) or any(cell.strip() for cell in cells[len(header) :]):
            message = f"{len(cells)} cells, the header has {len(header)}"
            problems.append(Problem(str(path), start, "", "field_count", message))
        # Interned: an export repeats most of its cells (tenant, status, titles, departments, dates), and a
        # 50,000-row file then holds each once.
        rows.append(CsvRow(start, [sys.intern(cell) for cell in cells], positions))
    return CsvFile(path, digest, header, rows, problems)


def column_positions(header: Sequence[str]) -> dict[str, int]:
    """Where each header name (as `column_key` makes it) is; a repeated name is found at its last place,
    as only unmapped columns may repeat."""
    return {column_key(name): position for position, name in enumerate(header)}


def header_names(cells: Sequence[str]) -> list[str]:
    """A header row's names, trimmed, without the empty cells that end it (``Name;Email;;``: a
    spreadsheet's save of a sheet with formatted empty columns)."""
    names = [name.strip() for name in cells]
    while names and not names[-1]:
        names.pop()
    return names


def _syntax_problem(path: Path, text: str, delimiter: str, reader: _csv.Reader, error: csv.Error) -> Problem:
    """The problem of a file the csv module refused. A quoted cell never closed would swallow the rest of
    the file; the problem names the line where that cell began, not where reading stopped."""
    record = reader.line_num
    opened = open_quote_line(text, delimiter)
    if opened is not None:
        message = (
            f"the quoted cell that begins on line {opened} is never closed as CSV requires "
            f'(a stray " or a cell cut short; reading stopped at line {record}: {error})'
        )
        return Problem(str(path), opened, "", "csv_syntax", message)
    return Problem(str(path), record, "", "csv_syntax", f"cannot be read as CSV: {error}")


def open_quote_line(text: str, delimiter: str) -> int | None:
    """The physical line of the first quoted cell that is not closed as RFC 4180 asks (its closing quote
    missing, or followed by something other than a delimiter or a line break); None when every quoted cell
    closes. Physical lines end as `LINE_BREAK` says."""
    line, index, size = 1, 0, len(text)
    at_start = True
    while index < size:
        char = text[index]
        if at_start and char == '"':
            closed, index, lines = _quoted_cell(text, index + 1, delimiter)
            if not closed:
                return line
            line += lines
            at_start = False
            continue
        at_start = char in (delimiter, "\r", "\n")
        if char == "\n" or (char == "\r" and text[index + 1 : index + 2] != "\n"):
            line += 1
        index += 1
    return None


def _quoted_cell(text: str, index: int, delimiter: str) -> tuple[bool, int, int]:
    """Scan a quoted cell from just after its opening quote: whether it closes properly, where scanning
    goes on, and how many line breaks the cell holds."""
    lines = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            if text[index + 1 : index + 2] == '"':
                index += 2
                continue
            following = text[index + 1 : index + 2]
            return following in ("", delimiter, "\r", "\n"), index + 1, lines
        if char == "\n" or (char == "\r" and text[index + 1 : index + 2] != "\n"):
            lines += 1
        index += 1
    return False, index, lines


PRIVATE_FILE = 0o666 & ~PRIVATE_UMASK
"""0600: what `warehouse.files` makes every new file; `private_file` makes an existing one so too."""


def private_file(path: Path, encoding: str = "utf-8", newline: str | None = None) -> TextIO:
    """``path`` opened to write text, readable and writable by its owner only: plans and error reports
    hold personal data. An existing file (an error report written before, under another umask) is
    truncated and made private too, which the process's umask alone would not do."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    os.fchmod(descriptor, PRIVATE_FILE)  # O_CREAT's mode applies only to a file it creates
    return open(descriptor, "w", encoding=encoding, newline=newline)  # noqa: PTH123 - a descriptor


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]], delimiter: str = ",") -> Path:
    """Write a UTF-8 CSV (with BOM, so spreadsheets detect the encoding) readable by the owner only (it
    holds personal data), through `pipelines.csv_cells.write_table` (header cells included: an error
    report repeats the upload's header, which HR's file may have written as a formula). Returns ``path``."""
    with private_file(path, encoding="utf-8-sig", newline="") as handle:
        write_table(handle, header, rows, delimiter)
    return path
