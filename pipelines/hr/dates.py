"""Dates as HR exports write them: a list of accepted formats per column, Excel serial numbers, and a check
of the day/month order of a whole file before any of its dates is trusted.

A cell is read by the first of its column's formats that fits it (a time part after the date is accepted
and ignored: HR systems export dates as midnight timestamps), else as an Excel serial day number (what a
date cell becomes when a workbook is saved as CSV without a date format). A workbook's date cells are
dates already (`pipelines.hr.upload`) and skip all of this.

**The order check.** ``01/02/2026`` is 1 February under ``%d/%m/%Y`` and 2 January under ``%m/%d/%Y``.
One export writes every date in one order, so a file's values can prove it: ``25/12/2025`` fits only
day/month, ``12/25/2025`` only month/day. Over the file's date columns that share a list of formats, a
value that fits only the swapped order while none fits only the mapped one proves the mapping wrong for
this export, and a file whose every such value fits both orders cannot tell: either way each such
column is refused with one problem naming it (rule ``date_order``), instead of swapping days and months
in silence. ``[csv] trust_date_order = true`` accepts the ambiguous case when the export's order is known.
Formats whose year comes first (``%Y-%m-%d``) are never swapped: nobody writes year-day-month; nor are
day-first dotted formats (``%d.%m.%Y``): nobody writes month.day.year.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from pipelines.hr.csv_input import CsvFile, column_key
from pipelines.hr.problems import Problem

_TIME_PART = re.compile(r"[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$")
"""A time of day after a date, with optional seconds, fraction and UTC offset."""
_SERIAL = re.compile(r"\d{1,7}(?:\.\d+)?")
EXCEL_EPOCH = date(1899, 12, 30)
"""Day 0 of Excel's (1900) date system, as serials above 60 count from it."""
EXCEL_SERIALS = range((date(1930, 1, 1) - EXCEL_EPOCH).days, (date(2100, 1, 1) - EXCEL_EPOCH).days)
"""Serial numbers read as dates: days from 1930 to 2099. A smaller number (``2026``) is no HR date."""
DATE_ORDER_RULE = "date_order"
DOTTED_DAY_FIRST = re.compile(r"%d\.%m\.")
"""Day, dot, month: the order every locale that writes dates with dots uses (German, Russian, Polish,
Norwegian, ...); month.day is written nowhere, so such dates are never in doubt."""


def parse_date(value: str, formats: Sequence[str]) -> date | None:
    """The date of ``value`` by the first of ``formats`` that fits (with or without a time part after the
    date), else as an Excel serial; None when nothing fits."""
    return _formatted(value, formats) or excel_serial(value)


def _formatted(value: str, formats: Iterable[str]) -> date | None:
    candidates = (value, *_date_part(value))
    for form in formats:
        for text in candidates:
            try:
                return _parsed(text, form)
            except ValueError:
                continue
    return None


_ISO_DAY = "%Y-%m-%d"
_ISO_DAY_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _parsed(text: str, form: str) -> date:
    """``text`` as a date in format ``form``; ValueError when it does not fit. An ISO day in ASCII digits,
    the common case, is read by ``date.fromisoformat``, which accepts and refuses exactly those days that
    ``strptime`` does: ``strptime`` looks the locale up on every call, more than half of reading a date."""
    if form == _ISO_DAY and _ISO_DAY_TEXT.fullmatch(text):
        return date.fromisoformat(text)
    return datetime.strptime(text, form).date()


def _date_part(value: str) -> list[str]:
    found = _TIME_PART.search(value)
    return [value[: found.start()]] if found else []


def excel_serial(value: str) -> date | None:
    """The date of an Excel serial day number (``45292`` or ``45292.5``: the fraction is the time of day,
    ignored) within `EXCEL_SERIALS`; None for anything else."""
    if not _SERIAL.fullmatch(value):
        return None
    days = int(float(value))
    return EXCEL_EPOCH + timedelta(days=days) if days in EXCEL_SERIALS else None


def as_of_moment(value: str, formats: Sequence[str]) -> datetime | None:
    """When an export was taken, from an as-of cell: an ISO date and time (UTC unless it says otherwise),
    or a date in one of ``formats`` (then the start of that day, UTC: the earliest it can mean)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        day = parse_date(value, formats)
        return datetime(day.year, day.month, day.day, tzinfo=UTC) if day else None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def swapped(form: str) -> str | None:
    """``form`` with day and month exchanged, when it writes both and not year first, nor day first with
    dots (``%d.%m.%Y``: no locale writes month.day); else None."""
    if "%d" not in form or "%m" not in form or form.lstrip().startswith(("%Y", "%y")):
        return None
    if DOTTED_DAY_FIRST.search(form):
        return None
    return form.replace("%d", "\0").replace("%m", "%d").replace("\0", "%m")


def both_orders(formats: Sequence[str]) -> list[str]:
    """The formats of a list whose swapped order is in the list too (such a list reads 01/02 either way)."""
    return [form for form in formats if swapped(form) in formats]


@dataclass
class _Evidence:
    """What date values say about the day/month order of their formats: counts per verdict and the first
    value of each (its line and column)."""

    counts: Counter[str] = field(default_factory=Counter)
    example: dict[str, tuple[int, str, str]] = field(default_factory=dict)

    def add(self, verdict: str, line: int, column: str, value: str) -> None:
        """Count one value's verdict."""
        self.counts[verdict] += 1
        self.example.setdefault(verdict, (line, column, value))

    def merge(self, other: _Evidence) -> None:
        """Add another column's evidence (its examples only where this has none)."""
        self.counts.update(other.counts)
        for verdict, example in other.example.items():
            self.example.setdefault(verdict, example)


def date_order_problems(file: CsvFile, columns: Mapping[str, Sequence[str]], trust: bool) -> list[Problem]:
    """One ``date_order`` problem per date column of ``file`` (HR column -> its formats) whose day/month
    order the file's values contradict, or leave open (unless ``trust``); see the module docstring."""
    evidence = {column: _evidence(file, column, formats) for column, formats in columns.items()}
    pooled: dict[tuple[str, ...], _Evidence] = {}
    for column, found in evidence.items():
        pooled.setdefault(tuple(columns[column]), _Evidence()).merge(found)
    problems = []
    for column, found in evidence.items():
        message = _order_message(found, pooled[tuple(columns[column])], columns[column], trust)
        if message:
            problems.append(Problem(file.name, 1, column, DATE_ORDER_RULE, message))
    return problems


def _evidence(file: CsvFile, column: str, formats: Sequence[str]) -> _Evidence:
    found = _Evidence()
    others = [swap for form in formats if (swap := swapped(form))]
    if not others:
        return found
    key = column_key(column)
    for row in file.rows:
        value = (row.value(column) or "").strip()
        if not value or key in row.dates or excel_serial(value):
            continue
        own, other = _formatted(value, formats), _formatted(value, others)
        if own is None and other is not None:
            found.add("contradicting", row.line, column, value)
        elif own is not None and other is None:
            found.add("confirming", row.line, column, value)
        elif own is not None and other != own:
            found.add("ambiguous", row.line, column, value)
    return found


def _order_message(found: _Evidence, pooled: _Evidence, formats: Sequence[str], trust: bool) -> str | None:
    """Why a column's dates cannot be trusted, given its own evidence and that of the file's columns of
    the same formats; None when they can (a value that fits no format is then one row's problem)."""
    if pooled.counts["confirming"] or not (found.counts["contradicting"] or found.counts["ambiguous"]):
        return None
    if pooled.counts["contradicting"]:
        line, column, value = pooled.example["contradicting"]
        return (
            f"the export writes the other day/month order: {pooled.counts['contradicting']} date(s) fit only "
            f"it (e.g. {value!r} in {column} on line {line}) and none fits only {' or '.join(formats)}; no "
            "date of this column is read with days and months swapped: set its date_formats"
        )
    if trust:
        return None
    line, _, value = found.example["ambiguous"]
    return (
        f"{found.counts['ambiguous']} date(s) read as day/month and as month/day alike (e.g. {value!r} on "
        f"line {line}) and no date of the file tells which: use a format that tells (e.g. %Y-%m-%d), or "
        "set [csv] trust_date_order = true if the export's order is certain"
    )
