"""Cells safe to open in a spreadsheet: the one writer (`write_table`) and rule (`safe_cell`) of every CSV
the product writes (HR error reports and plans, ``authority-sync sql --format csv``), header cells included.

A cell a spreadsheet would run as a formula (OWASP "CSV injection": a leading ``=``, ``+``, ``-``, ``@``,
tab or carriage return, before or after leading spaces) is written with a leading apostrophe, which
spreadsheets show as text and do not run. Numbers are not text and are written as they are (``-5`` is
minus five in any spreadsheet, and a program reading the CSV still reads a number). In a phone column an
international number is left as it is: it cannot call a function or reference a cell.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from typing import IO

from models.base import PHONE_PATTERN

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""Characters that make a spreadsheet treat a cell as a formula."""
ESCAPE = "'"
"""What `safe_cell` puts before a cell that could run as a formula."""
_PHONE = re.compile(PHONE_PATTERN)
_PHONE_WITH_EXTENSION = re.compile(r"\+[0-9+().\s-]+(?:ext\.?|extension|x|#)\s*[0-9]+", re.IGNORECASE)
"""An international number with an extension (``+1 555 0100 ext 12``, ``+1 555 0100 x12``): letters, but
no function call or cell reference. E1 refuses it (``phone_pattern``); it is no formula."""


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
    character): a cell of a report uploaded again, which must not come back as data."""
    return value.startswith(ESCAPE) and value[1:].lstrip().startswith(FORMULA_PREFIXES)


def safe_cell(value: str) -> str:
    """``value`` made inert for spreadsheets with a leading apostrophe when it could run as a formula, as
    written or once trimmed (a leading space hides nothing; a leading tab or carriage return is itself a
    prefix)."""
    risky = formula_prefixed(value) or formula_prefixed(value.strip())
    return f"{ESCAPE}{value}" if risky else value


class Inert(str):
    """Text that cannot run as a formula although it may start like one (a number, an international
    phone number in a phone column): `write_table` writes it as it is."""

    __slots__ = ()


def phone_cell(value: str) -> str:
    """A phone column's cell: `Inert` when it is an international number (see `formula_prefixed`)."""
    return Inert(value) if value.startswith("+") and not formula_prefixed(value, phone=True) else value


def write_table(
    out: IO[str], header: Sequence[str], rows: Iterable[Sequence[str]], delimiter: str = ","
) -> None:
    """Write a header and rows as CSV, every cell but an `Inert` one through `safe_cell`. Lines end in
    CRLF (RFC 4180): the csv module quotes a cell holding a carriage return only then, which would
    otherwise end the line in every reader."""
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow([_written(cell) for cell in header])
    writer.writerows([_written(cell) for cell in row] for row in rows)


def _written(cell: str) -> str:
    return cell if isinstance(cell, Inert) else safe_cell(cell)
