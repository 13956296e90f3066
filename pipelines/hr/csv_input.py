"""Reading HR exports: a header row, quoted fields (which may span lines), the encoding and delimiter HR's
system writes.

The encoding is a setting (``[csv] encoding`` or ``--encoding``): UTF-8 with or without BOM by default,
``cp1252`` or ``latin-1`` (or any Python codec name) for exports of older HR systems. The delimiter is
detected from the header line (comma, semicolon or tab, whichever splits it into the most columns; a comma
on a tie) unless set (``[csv] delimiter``, ``--delimiter``). Header names match the mapping ignoring case
and surrounding spaces.

The standard library's reader is used rather than pandas: it reports the physical line a record starts on
(``line_num``), and every problem must name the line HR's editor shows; pandas numbers records, so after a
quoted cell spanning lines every later line would be off. pandas would add a second parser and its type
guessing (an employee id ``00123`` read as a number) for nothing this needs, so it is not a dependency.

Each row keeps the physical line it starts on. Cells are kept exactly as read; trimming and checks happen
in `pipelines.hr.rows`. Writing CSV back (error reports, plans) goes through `safe_cell`, so nothing this
tool writes can run as a formula when opened in a spreadsheet.
"""

from __future__ import annotations

import _csv
import codecs
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
ESCAPE = "'"
"""What `safe_cell` puts before a cell that could run as a formula."""
DELIMITERS = (",", ";", "\t")
"""The delimiters detected, in order of preference on a tie."""
FILE_RULES = frozenset({"unreadable", "encoding", "csv_syntax", "empty_file", "duplicate_column"})
"""Problems that refuse a whole file (the others are of one row)."""
_PHONE = re.compile(PHONE_PATTERN)
_PHONE_WITH_EXTENSION = re.compile(r"\+[0-9+().\s-]+(?:ext\.?|extension|x|#)\s*[0-9]+", re.IGNORECASE)
"""An international number with an extension (``+1 555 0100 ext 12``, ``+1 555 0100 x12``): letters, but
no function call or cell reference. E1 refuses it (``phone_pattern``); it is no formula."""


def column_key(name: str) -> str:
    """How a header name is compared with the mapping's: case and surrounding spaces do not count."""
    return name.strip().casefold()


@dataclass(frozen=True)
class CsvRow:
    """One record: the physical line it starts on, its cells, and its cells by `column_key` of the header."""

    line: int
    cells: list[str]
    values: dict[str, str]

    def value(self, column: str) -> str | None:
        """The cell of ``column`` (matched as `column_key` does); None when the row has no such cell."""
        return self.values.get(column_key(column))


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

    def has(self, column: str) -> bool:
        """Whether the header names ``column`` (ignoring case and surrounding spaces)."""
        return column_key(column) in {column_key(name) for name in self.header}

    @property
    def refused(self) -> list[Problem]:
        """The problems that make the whole file unusable."""
        return [problem for problem in self.problems if problem.rule in FILE_RULES]


def read_csv(path: Path, encoding: str = "utf-8", delimiter: str | None = None) -> CsvFile:
    """Read and hash one HR file (``delimiter`` None: detected). A file that cannot be read or decoded
    comes back with one problem of the whole file and no rows."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return CsvFile(path, "", problems=[Problem(str(path), 0, "", "unreadable", _os_reason(error))])
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = _decode(data, encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        message = (
            f"line {line} is not {encoding} ({error.reason} at byte {error.start}); "
            "name the file's encoding with --encoding (e.g. cp1252, latin-1) or [csv] encoding"
        )
        return CsvFile(path, digest, problems=[Problem(str(path), line, "", "encoding", message)])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter or detect_delimiter(text))
    try:
        return _parse(path, digest, reader)
    except csv.Error as error:
        # Typically a quote never closed: the line is where reading stopped, the message says why.
        problem = Problem(str(path), reader.line_num, "", "csv_syntax", f"cannot be read as CSV: {error}")
        return CsvFile(path, digest, problems=[problem])


def _os_reason(error: OSError) -> str:
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(error, FileNotFoundError):
        return "no such file"
    return error.strerror or str(error)


def _decode(data: bytes, encoding: str) -> str:
    """``data`` as text; UTF-8 takes an optional BOM (spreadsheets write one, most HR systems do not). A
    UTF-8 BOM wins over the setting: it is this tool's own error report (or a spreadsheet's save) uploaded
    with files of another encoding, and read as cp1252 it would garble every accent."""
    if data.startswith(codecs.BOM_UTF8) or codecs.lookup(encoding).name == "utf-8":
        return data.decode("utf-8-sig")
    return data.decode(encoding)


def detect_delimiter(text: str) -> str:
    """The delimiter of `DELIMITERS` that splits the header line into the most columns (the first on a
    tie, so a one-column file reads as comma-separated)."""
    first = text.partition("\n")[0]
    widths = {candidate: len(next(csv.reader([first], delimiter=candidate), [])) for candidate in DELIMITERS}
    return max(DELIMITERS, key=lambda candidate: widths[candidate])


def _parse(path: Path, digest: str, reader: _csv.Reader) -> CsvFile:
    header = [name.strip() for name in next(reader, [])]
    keys = [column_key(name) for name in header]
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
        rows.append(CsvRow(start, cells, dict(zip(keys, cells, strict=False))))
    return CsvFile(path, digest, header, rows, problems)


def _header_problems(name: str, header: list[str]) -> list[Problem]:
    if not any(header):
        return [Problem(name, 0, "", "empty_file", "no header row")]
    seen: set[str] = set()
    problems = []
    for column in header:
        if column_key(column) in seen:
            problems.append(Problem(name, 1, column, "duplicate_column", "the header names this twice"))
        seen.add(column_key(column))
    return problems


def formula_prefixed(value: str, phone: bool = False) -> bool:
    """Whether a spreadsheet would read ``value`` as a formula. In a phone column (``phone``), an
    international number (a leading ``+`` and otherwise the E1 phone pattern, or such a number with an
    extension) is legitimate: it cannot call a function or reference a cell."""
    if (
        phone
        and value.startswith("+")
        and (_PHONE.fullmatch(value) or _PHONE_WITH_EXTENSION.fullmatch(value))
    ):
        return False
    return value.startswith(FORMULA_PREFIXES)


def escaped_formula(value: str) -> bool:
    """Whether ``value`` carries this tool's own escape (`safe_cell`'s apostrophe before a formula
    character): a cell of an error report uploaded again, which must not come back as data."""
    return value.startswith(ESCAPE) and value[1:].lstrip().startswith(FORMULA_PREFIXES)


def safe_cell(value: str, phone: bool = False) -> str:
    """``value`` made inert for spreadsheets with a leading apostrophe when it could run as a formula
    (judged trimmed, as the sync reads cells: a leading space hides nothing)."""
    return f"{ESCAPE}{value}" if formula_prefixed(value.strip(), phone) else value


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> Path:
    """Write a UTF-8 CSV (with BOM, so spreadsheets detect the encoding); cells must already have been
    through `safe_cell`. Returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path
