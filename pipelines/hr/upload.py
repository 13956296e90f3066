"""Reading one file of an upload: an Excel workbook (.xlsx) or CSV, told apart by content, not by name.

A workbook is read with openpyxl in read-only mode, row by row, as HR sees it (`pipelines.hr.workbook`).
openpyxl was measured against pandas (``read_excel`` with the openpyxl engine, which parses the same XML
and then builds a DataFrame) on a 50,000-row, 16-column export: openpyxl alone read it in 5.1 s at a
58 MB peak, pandas in 6.7 s plus 1.8 s of import at 158 MB; and openpyxl gives each row's own sheet row
number (every problem names it) and each cell's type (a date cell is a date, whatever the mapping's date
formats say), which a DataFrame blurs (blank rows, numbers as floats). So workbooks are read with
openpyxl directly.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pipelines.hr.csv_input import CsvFile, parse_csv, read_bytes, without_footers
from pipelines.hr.problems import Problem

XLSX_MAGIC = b"PK\x03\x04"
"""How an .xlsx file (a zip archive) starts."""
XLS_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""How an Excel 97-2003 workbook (.xls, an OLE2 compound file) starts."""


def read_upload(path: Path, encoding: str = "utf-8", delimiter: str | None = None) -> CsvFile:
    """Read one HR file: a workbook when its content is one (whatever its name), else CSV with the given
    encoding and delimiter."""
    data, problem = read_bytes(path)
    if problem is not None:
        return CsvFile(path, "", problems=[problem])
    if data.startswith(XLS_MAGIC):
        message = "an Excel 97-2003 workbook (.xls): save it as .xlsx (Excel Workbook) or as CSV"
        return CsvFile(path, _sha(data), problems=[Problem(str(path), 0, "", "unreadable", message)])
    if data.startswith(XLSX_MAGIC):
        # openpyxl is loaded for a workbook only: a CSV plan of 50,000 rows must fit in 400 MB, and openpyxl
        # costs about 25 MB of it.
        from pipelines.hr.workbook import read_workbook

        return without_footers(read_workbook(path, data, _sha(data)))
    return without_footers(parse_csv(path, data, encoding, delimiter))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
