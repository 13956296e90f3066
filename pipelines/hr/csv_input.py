"""Reading HR exports: UTF-8 with or without BOM, a header row, quoted fields (which may span lines).

Each row keeps the physical line it starts on, so every problem can point HR at the line their editor
shows. Cells are kept exactly as read; trimming and checks happen in `pipelines.hr.validate`. Writing CSV
back (error reports, plans) goes through `safe_cell`, so nothing this tool writes can run as a formula
when opened in a spreadsheet.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from models.base import PHONE_PATTERN
from pipelines.hr.problems import Problem

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""Characters that make a spreadsheet treat a cell as a formula (OWASP "CSV injection")."""
_PHONE = re.compile(PHONE_PATTERN)


@dataclass(frozen=True)
class CsvRow:
    """One record: the physical line it starts on and its cells by header name."""

    line: int
    cells: list[str]
    values: dict[str, str]


@dataclass(frozen=True)
class CsvFile:
    """An HR file as read: its hash, header, rows and the problems of the file as a whole or of a row's
    shape (a row with too few or too many cells)."""

    path: Path
    sha256: str
    header: list[str] = field(default_factory=list)
    rows: list[CsvRow] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def name(self) -> str:
        """How problems name the file."""
        return str(self.path)


def read_csv(path: Path) -> CsvFile:
    """Read and hash one HR file. An unreadable file comes back with a line-0 problem and no rows."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problem = Problem(str(path), 0, "", "encoding", f"line {line} is not UTF-8: {error.reason}")
        return CsvFile(path, digest, problems=[problem])
    try:
        return _parse(path, digest, text)
    except csv.Error as error:
        return CsvFile(path, digest, problems=[Problem(str(path), 0, "", "csv_syntax", str(error))])


def _parse(path: Path, digest: str, text: str) -> CsvFile:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    problems = _header_problems(str(path), header)
    rows: list[CsvRow] = []
    while True:
        start = reader.line_num + 1
        cells = next(reader, None)
        if cells is None:
            break
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            message = f"{len(cells)} cells, the header has {len(header)}"
            problems.append(Problem(str(path), start, "", "field_count", message))
        rows.append(CsvRow(start, cells, dict(zip(header, cells, strict=False))))
    return CsvFile(path, digest, header, rows, problems)


def _header_problems(name: str, header: list[str]) -> list[Problem]:
    if not any(header):
        return [Problem(name, 0, "", "empty_file", "no header row")]
    seen: set[str] = set()
    problems = []
    for column in header:
        if column in seen:
            problems.append(Problem(name, 1, column, "duplicate_column", "the header names this twice"))
        seen.add(column)
    return problems


def formula_prefixed(value: str, phone: bool = False) -> bool:
    """Whether a spreadsheet would read ``value`` as a formula. In a phone column (``phone``), an
    international number (a leading ``+`` and otherwise the E1 phone pattern) is legitimate: digits, spaces
    and ``+ ( ) . -`` cannot call a function or reference a cell."""
    if phone and value.startswith("+") and _PHONE.fullmatch(value):
        return False
    return value.startswith(FORMULA_PREFIXES)


def safe_cell(value: str, phone: bool = False) -> str:
    """``value`` made inert for spreadsheets with a leading apostrophe when it could run as a formula."""
    return f"'{value}" if formula_prefixed(value, phone) else value


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> Path:
    """Write a UTF-8 CSV (with BOM, so spreadsheets detect the encoding); cells must already have been
    through `safe_cell`. Returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path
