"""One HR row turned into desired field values, with the rules a single row can break.

Field rules are the spec's own: the values are validated by the request models of E1
(`UpdateUserEntities`: lengths, email format, phone pattern, status enum, timestamps) and E3
(`UpdateGroup`), so the file is held to exactly what the service accepts. What the models normalise (an
email's domain case) is what gets planned, so a write's response can be compared with the plan exactly.

References (manager, positions, groups, roles, parent) stay HR-side keys and names here; they are
resolved to ids against the warehouse in `pipelines.hr.resolve`.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from models.groups import UpdateGroup
from models.hr.fields import USER_DATE_FIELDS, USER_REFERENCE_FIELDS, EntityKind, Values
from models.users import UpdateUserEntities
from pipelines.csv_cells import escaped_formula, formula_prefixed
from pipelines.hr.csv_input import CsvRow, column_key
from pipelines.hr.dates import as_of_moment, parse_date
from pipelines.hr.mapping import AS_OF_FIELD, EFFECTIVE_FIELD, TENANT_FIELD, CsvOptions, EntityMapping
from pipelines.hr.problems import Problem

REFERENCE_FIELDS = frozenset({*USER_REFERENCE_FIELDS, "parent"})
SINGLE_REFERENCES = frozenset({"manager", "parent"})
"""References that take one key; the others take a list (``list_separator``)."""
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL: no text of the service holds them (a line break in a name, or
cp1252's curly quotes read as latin-1, ``O\\x92Brien``), so a cell holding one is refused, never written."""
METADATA_FIELDS = frozenset({TENANT_FIELD, EFFECTIVE_FIELD, AS_OF_FIELD})
"""Fields about the row, never written: checked and read on their own."""
UNCHECKED_FIELDS = frozenset({"external_id"})
"""Fields with no rule of their own in E1/E3 (a group's externalId cannot be written)."""
_RULES = {
    "string_too_long": "max_length",
    "string_pattern_mismatch": "phone_pattern",
    "value_error": "email_format",
    "enum": "enum",
}
"""Pydantic error types of the E1/E3 models, as rule names (the only pattern is the phone's, the only
value check the email's)."""


@dataclass(slots=True)
class HrRow:
    """One row of an HR file: where it is, its key, what it asks for, and what it matches."""

    kind: EntityKind
    file: str
    line: int
    key: str
    """The row's first match key (employee id or external id), as written; may be blank."""
    cells: dict[str, str]
    """Trimmed cell of every mapped field, blank ones included."""
    desired: Values = field(default_factory=dict)
    """Field -> value the row asks for; references hold ids once resolved. Blank cells are absent."""
    references: dict[str, list[str]] = field(default_factory=dict)
    """Reference field -> HR keys or names as written, until resolved (`pipelines.hr.resolve`)."""
    entity_id: str | None = None
    """The service record the row matches; None when it needs creation."""
    matched_by: str | None = None
    """The match key (field) that found ``entity_id``."""
    effective_on: date | None = None
    """The row's effective date as written (the planner decides whether it is still to come)."""
    as_of: datetime | None = None
    """When the row was exported, from its as-of cell (None: the file's as-of time applies)."""
    typed_dates: dict[str, date] = field(default_factory=dict)
    """Field -> the date of a cell a workbook typed as a date."""
    problems: list[Problem] = field(default_factory=list)

    def problem(self, mapping: EntityMapping, field_name: str, rule: str, message: str) -> None:
        """Record a broken rule at the column of ``field_name``."""
        self.problems.append(Problem(self.file, self.line, mapping.column(field_name) or "", rule, message))

    @property
    def valid(self) -> bool:
        """Whether the row broke no rule."""
        return not self.problems


def parse_row(file: str, row: CsvRow, mapping: EntityMapping, options: CsvOptions, tenant_id: str) -> HrRow:
    """Check one row's cells and turn them into desired values. A mapped column the file lacks (only the
    optional ones may be missing) is no cell of the row."""
    raw = {
        name: value for name, column in mapping.columns.items() if (value := row.value(column)) is not None
    }
    parsed = HrRow(mapping.kind, file, row.line, raw.get(mapping.match_keys[0], "").strip(), {})
    parsed.typed_dates = {
        name: day for name, column in mapping.columns.items() if (day := row.dates.get(column_key(column)))
    }
    for name, value in raw.items():
        _check_cell(parsed, mapping, name, value.strip())
    _check_tenant(parsed, mapping, tenant_id)
    parsed.effective_on = _effective_on(parsed, mapping, options)
    parsed.as_of = _as_of(parsed, mapping, options)
    scalars = _scalars(parsed, mapping, options)
    parsed.desired = _validated(parsed, mapping, scalars, tenant_id)
    parsed.references = {
        name: _split(value, name, options.list_separator)
        for name, value in parsed.cells.items()
        if name in REFERENCE_FIELDS and value
    }
    return parsed


def _check_cell(row: HrRow, mapping: EntityMapping, name: str, value: str) -> None:
    """Keep a trimmed cell in Unicode's composed form (NFC: an ``é`` typed on a Mac is the ``é`` of every
    other system), unless it could run as a formula, carries this tool's own escape or holds a control
    character (`CONTROL_CHARACTERS`). Trimmed first: a
    spreadsheet ignores the leading space that would otherwise hide ``=``."""
    if escaped_formula(value):
        message = "starts with ' and a formula character, as the error report writes it: not passed on"
        row.problem(mapping, name, "escaped_formula", message)
    elif formula_prefixed(value, phone=name == "mobile_phone"):
        row.problem(mapping, name, "formula_injection", "starts with = + - @ tab or CR: not passed on")
    elif control := CONTROL_CHARACTERS.search(value):
        found = control.group()
        message = f"holds the control character U+{ord(found):04X} ({found!r}): not passed on"
        row.problem(mapping, name, "control_characters", message)
    else:
        row.cells[name] = sys.intern(unicodedata.normalize("NFC", value))


def _check_tenant(row: HrRow, mapping: EntityMapping, tenant_id: str) -> None:
    value = row.cells.get(TENANT_FIELD)
    if value is not None and value.casefold() != tenant_id.casefold():
        shown = value or "blank"
        row.problem(mapping, TENANT_FIELD, "wrong_tenant", f"{shown}: this file is for tenant {tenant_id}")


def _scalars(row: HrRow, mapping: EntityMapping, options: CsvOptions) -> dict[str, str]:
    """Non-blank, non-reference cells, with status words translated and dates in ISO form."""
    scalars: dict[str, str] = {}
    for name, value in row.cells.items():
        if not value or name in REFERENCE_FIELDS or name in METADATA_FIELDS:
            continue
        if name == "status":
            status = _status(row, mapping, value)
            if status is not None:
                scalars[name] = status
        elif name in USER_DATE_FIELDS:
            day = _checked_date(row, mapping, name, value, options)
            if day is not None:
                scalars[name] = day.isoformat()
        else:
            scalars[name] = value
    return scalars


def _status(row: HrRow, mapping: EntityMapping, value: str) -> str | None:
    """The service status of the row's HR status word, or None with an ``unknown_status`` problem."""
    status = mapping.status(value)
    if status is None:
        words = ", ".join(mapping.status_values) or "none"
        row.problem(
            mapping, "status", "unknown_status", f"{value!r} is not a status word of the mapping: {words}"
        )
    return status


def _effective_on(row: HrRow, mapping: EntityMapping, options: CsvOptions) -> date | None:
    """The row's effective date cell, read like the other dates; None when blank or not mapped."""
    value = row.cells.get(EFFECTIVE_FIELD)
    return _checked_date(row, mapping, EFFECTIVE_FIELD, value, options) if value else None


def _as_of(row: HrRow, mapping: EntityMapping, options: CsvOptions) -> datetime | None:
    """When the row was exported, from its as-of cell; None when blank or not mapped."""
    value = row.cells.get(AS_OF_FIELD)
    if not value:
        return None
    moment = as_of_moment(value, mapping.formats(AS_OF_FIELD, options))
    if moment is None:
        row.problem(mapping, AS_OF_FIELD, "date", f"{value!r} is not a date and time (ISO) nor a date")
    return moment


def _checked_date(
    row: HrRow, mapping: EntityMapping, name: str, value: str, options: CsvOptions
) -> date | None:
    """The date of a cell (a workbook's date cell as it is), or None with a ``date`` problem recorded."""
    formats = mapping.formats(name, options)
    day = row.typed_dates.get(name) or parse_date(value, formats)
    if day is None:
        shown = " or ".join(formats)
        row.problem(
            mapping, name, "date", f"{value!r} is not a date of the form {shown} (nor an Excel serial)"
        )
    return day


def _validated(row: HrRow, mapping: EntityMapping, scalars: dict[str, str], tenant_id: str) -> Values:
    """The scalars as the E1/E3 model normalises them; each broken rule becomes a problem of its field."""
    checked = {name: value for name, value in scalars.items() if name not in UNCHECKED_FIELDS}
    model = UpdateUserEntities if row.kind == "user" else UpdateGroup
    payload: dict[str, Any] = {"tenant_id": tenant_id} if row.kind == "user" else {}
    try:
        validated = model.model_validate(payload | checked)
    except PydanticValidationError as error:
        for item in error.errors(include_url=False, include_input=False):
            name = str(item["loc"][0])
            rule = _RULES.get(item["type"]) or ("date" if "date" in item["type"] else item["type"])
            row.problem(mapping, name, rule, f"{scalars[name]!r}: {item['msg']}")
            checked.pop(name, None)
        validated = model.model_validate(payload | checked)
    plain: Values = {name: _plain(getattr(validated, name)) for name in checked}
    return plain | {name: scalars[name] for name in UNCHECKED_FIELDS if name in scalars}


def _plain(value: object) -> str:
    """A validated value as the plan holds it, interned (most repeat from row to row)."""
    if isinstance(value, Enum):
        return sys.intern(str(value.value))
    if isinstance(value, datetime):
        return sys.intern(value.date().isoformat())
    return sys.intern(str(value))


def _split(value: str, name: str, separator: str) -> list[str]:
    if name in SINGLE_REFERENCES:
        return [value]
    return [part.strip() for part in value.split(separator) if part.strip()]
