"""Validate an upload (one or more HR files) before anything is planned.

Order: the files (readable, a known kind, every mapped column present once, dates in a provable day/month
order), each row's fields (E1/E3 rules, formula injection, tenant), duplicate keys, ids as a spreadsheet
may have changed them (`pipelines.hr.ids`), matching to service records, references, dates across fields,
identity beyond the key (`pipelines.hr.identity`), then the org graph (cycles, inactive managers). Every
problem names file, physical line, HR column and rule; a row with
any problem is invalid and never planned.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from models.hr.fields import EntityKind
from pipelines.hr.csv_input import FILE_RULES, CsvFile, column_key
from pipelines.hr.dates import date_order_problems
from pipelines.hr.graph import check_org_graph
from pipelines.hr.identity import check_identity, foreign_files
from pipelines.hr.ids import check_ids
from pipelines.hr.mapping import OPTIONAL_FIELDS, EntityMapping, Mapping
from pipelines.hr.problems import Problem
from pipelines.hr.resolve import References, match_rows
from pipelines.hr.rows import HrRow, parse_row
from pipelines.hr.snapshot import Snapshot, fold
from pipelines.hr.staleness import ExportTimes, old_exports, stale_rows

HIDDEN_COLUMN_RULE = "hidden_column"
_SHOWN_COLUMNS = 8
"""Header names an unknown_file_kind problem quotes at most."""


@dataclass
class Validation:
    """An upload after validation: its files, what kind each is, its rows and every problem."""

    files: list[CsvFile]
    kinds: dict[str, EntityKind] = field(default_factory=dict)
    rows: list[HrRow] = field(default_factory=list)
    file_problems: list[Problem] = field(default_factory=list)

    @property
    def problems(self) -> list[Problem]:
        """Every problem, by file, line and column."""
        return sorted([*self.file_problems, *(p for row in self.rows for p in row.problems)])

    @property
    def notes(self) -> list[Problem]:
        """What reading the files left out and why (a totals row), refusing nothing."""
        return [note for file in self.files for note in file.notes]

    def of_kind(self, kind: EntityKind) -> list[HrRow]:
        """The rows of one kind."""
        return [row for row in self.rows if row.kind == kind]

    def invalid_lines(self, file: str) -> dict[int, list[Problem]]:
        """Problems of each invalid row of one file, by line."""
        lines: dict[int, list[Problem]] = defaultdict(list)
        for row in self.rows:
            if row.file == file:
                lines[row.line] += row.problems
        return {line: problems for line, problems in lines.items() if problems}


def validate(
    files: list[CsvFile], mapping: Mapping, snapshot: Snapshot, today: date, times: ExportTimes | None = None
) -> Validation:
    """Check every file and row of an upload against the mapping and the warehouse; with ``times``, also
    whether each export (and row) is older than what the service holds (`pipelines.hr.staleness`)."""
    result = Validation(files)
    for file in files:
        kind = _kind(file, mapping, result.file_problems)
        if kind is None:
            continue
        result.kinds[file.name] = kind
        entity_mapping = mapping.for_kind(kind)
        columns = {
            column: formats
            for column, formats in entity_mapping.date_columns(mapping.csv).items()
            if file.has(column)
        }
        order = date_order_problems(file, columns, mapping.csv.trust_date_order)
        # A file whose dates cannot be trusted is refused with one problem per column, not one per row.
        result.file_problems += order
        if not order:
            result.rows += _rows(file, entity_mapping, mapping, snapshot.tenant_id)
    users, groups = result.of_kind("user"), result.of_kind("group")
    for rows, entity_mapping in ((users, mapping.users), (groups, mapping.groups)):
        _duplicates(rows, entity_mapping)
        check_ids(rows, entity_mapping, snapshot)
        match_rows(rows, entity_mapping, snapshot)
    references = References(snapshot, users, groups)
    for row in users:
        references.resolve_user(row, mapping.users)
        _termination_after_start(row, mapping.users, snapshot)
        if row.entity_id:
            current = snapshot.user_values[row.entity_id]
            check_identity(row, mapping.users, current, snapshot.user_label(row.entity_id))
    for row in groups:
        references.resolve_group(row, mapping.groups)
        if row.entity_id:
            current = snapshot.group_values[row.entity_id]
            check_identity(row, mapping.groups, current, snapshot.group_label(row.entity_id))
    result.file_problems += foreign_files(result.rows)
    if times is not None:
        result.file_problems += old_exports(files, result.rows, times)
        for rows, entity_mapping in ((users, mapping.users), (groups, mapping.groups)):
            stale_rows(rows, entity_mapping, snapshot, times)
    check_org_graph(users, groups, (mapping.users, mapping.groups), snapshot, today)
    return result


def _kind(file: CsvFile, mapping: Mapping, problems: list[Problem]) -> EntityKind | None:
    """The file's kind (by which key column its header has), checking every mapped column is there. The
    tenant column is optional: when the file has none, its rows are not checked for it."""
    problems += file.refused
    if file.refused:
        return None
    kinds: list[EntityKind] = [
        kind for kind in ("user", "group") if file.has(mapping.for_kind(kind).key_column)
    ]
    if len(kinds) != 1:
        problems.append(Problem(file.name, 1, "", "unknown_file_kind", _kind_message(file, mapping)))
        return None
    entity_mapping = mapping.for_kind(kinds[0])
    required = {column for name, column in entity_mapping.columns.items() if name not in OPTIONAL_FIELDS}
    missing = sorted(column for column in required if not file.has(column))
    problems += [
        Problem(file.name, 1, column, "missing_column", "mapped but not in the header") for column in missing
    ]
    # A column the mapping reads must be unambiguous; unmapped columns may repeat (they are ignored).
    twice = sorted({column for column in entity_mapping.columns.values() if file.count(column) > 1})
    problems += [
        Problem(file.name, 1, column, "duplicate_column", "the header names this mapped column twice")
        for column in twice
    ]
    hidden = hidden_mapped(file, entity_mapping)
    problems += hidden
    return None if missing or twice or hidden else kinds[0]


def hidden_mapped(file: CsvFile, entity_mapping: EntityMapping) -> list[Problem]:
    """A workbook's mapped columns hidden in Excel: their values would be written unseen."""
    mapped = {column_key(column) for column in entity_mapping.columns.values()}
    message = "the column is hidden in the workbook: unhide it (its values would be written unseen)"
    return [
        Problem(file.name, 1, name, HIDDEN_COLUMN_RULE, message)
        for name in file.hidden_columns
        if column_key(name) in mapped
    ]


def _kind_message(file: CsvFile, mapping: Mapping) -> str:
    """Which key columns tell the kinds apart, and what the header holds instead (a wrong delimiter or
    encoding shows there as one long column)."""
    wanted = f"{mapping.users.key_column!r} (users) or {mapping.groups.key_column!r} (org units)"
    shown = ", ".join(repr(name) for name in file.header[:_SHOWN_COLUMNS])
    more = f" and {len(file.header) - _SHOWN_COLUMNS} more" if len(file.header) > _SHOWN_COLUMNS else ""
    both = all(file.has(entity.key_column) for entity in (mapping.users, mapping.groups))
    return (
        f"the header must name one of {wanted}{', not both' if both else ''}; "
        f"found {len(file.header)} column(s): {shown}{more}"
    )


def _rows(file: CsvFile, entity_mapping: EntityMapping, mapping: Mapping, tenant_id: str) -> list[HrRow]:
    """The file's rows, each with the problems reading found in it: of its shape, of the whole row, or of
    a cell in a mapped column (an unmapped column's cells are never read)."""
    mapped = {column_key(column) for column in entity_mapping.columns.values()}
    found: dict[int, list[Problem]] = defaultdict(list)
    for problem in file.problems:
        if problem.rule not in FILE_RULES and (not problem.column or column_key(problem.column) in mapped):
            found[problem.line].append(problem)
    rows = []
    for csv_row in file.rows:
        row = parse_row(file.name, csv_row, entity_mapping, mapping.csv, tenant_id)
        row.problems[:0] = found.get(csv_row.line, [])
        rows.append(row)
    return rows


def _duplicates(rows: list[HrRow], mapping: EntityMapping) -> None:
    """Rows sharing a value that identifies one record: each is reported, since which one is right cannot
    be known."""
    for key_field in mapping.unique_fields:
        lines: dict[str, list[HrRow]] = defaultdict(list)
        for row in rows:
            if row.cells.get(key_field):
                lines[fold(row.cells[key_field])].append(row)
        for same in (group for group in lines.values() if len(group) > 1):
            for row in same:
                others = ", ".join(str(other.line) for other in same if other is not row)
                row.problem(mapping, key_field, "duplicate_key", f"also on line {others}")


def _termination_after_start(row: HrRow, mapping: EntityMapping, snapshot: Snapshot) -> None:
    ends = row.desired.get("termination_date")
    current = snapshot.user_values.get(row.entity_id or "", {})
    starts = row.desired.get("start_date") or current.get("start_date")
    if ends and starts and str(ends) < str(starts):
        row.problem(
            mapping, "termination_date", "termination_before_start", f"{ends} is before the start {starts}"
        )
