"""Files the HR sync writes for people: the plan as CSV and JSON, and the error report HR fixes and
re-uploads. Every CSV cell goes through `pipelines.csv_cells`, so no value (from HR or from the service) can
run as a spreadsheet formula; phone numbers with a leading ``+`` are left as they are."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from models.hr.fields import encode
from models.hr.plan import Change, Plan
from pipelines.csv_cells import phone_cell
from pipelines.hr.csv_input import CsvFile, column_key, private_file, write_csv
from pipelines.hr.mapping import Mapping
from pipelines.hr.problems import Problem
from pipelines.hr.validate import Validation

PLAN_COLUMNS = (
    "entity_kind",
    "entity_id",
    "hr_key",
    "field",
    "change_kind",
    "before",
    "after",
    "before_label",
    "after_label",
    "source_file",
    "source_line",
    "effective_on",
)
ERROR_COLUMNS = ("hr_sync_line", "hr_sync_errors")
"""Appended to the original columns in an error report; the mapping ignores them on re-upload."""


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    """One row per changed field, then one per row that needs creation (field ``*``)."""
    rows = [
        _row(entity.kind, entity.entity_id, entity.hr_key, change, entity.file, entity.line)
        for entity in plan.entities
        for change in entity.changes
    ]
    for new in plan.new:
        summary = "; ".join(f"{name}={value}" for name, value in new.cells.items() if value)
        rows.append(
            {
                **_row(new.kind, "", new.hr_key, None, new.file, new.line),
                "after_label": summary,
            }
        )
    return rows


def _row(kind: str, entity_id: str, key: str, change: Change | None, file: str, line: int) -> dict[str, Any]:
    return {
        "entity_kind": kind,
        "entity_id": entity_id,
        "hr_key": key,
        "field": change.field if change else "*",
        "change_kind": change.kind.value if change else "needs_creation",
        "before": encode(change.before) if change else "",
        "after": encode(change.after) if change else "",
        "before_label": change.before_label if change else "",
        "after_label": change.after_label if change else "",
        "source_file": file,
        "source_line": line,
        "effective_on": change.effective_on.isoformat() if change and change.effective_on else "",
    }


def write_plan_csv(path: Path, plan: Plan) -> Path:
    """The plan's changes as CSV (one row per field)."""
    return write_change_rows(path, plan_rows(plan))


def write_change_rows(path: Path, changes: Iterable[dict[str, Any]]) -> Path:
    """Rows with the `PLAN_COLUMNS` (a plan's, or a stored plan's items) as CSV."""
    rows = (
        [_cell(str(row[column]), phone=row["field"] == "mobile_phone") for column in PLAN_COLUMNS]
        for row in changes
    )
    return write_csv(path, PLAN_COLUMNS, rows)


def plan_document(plan: Plan) -> dict[str, Any]:
    """The whole plan as a JSON-ready document."""
    return {
        "plan_id": plan.plan_id,
        "tenant_id": plan.tenant_id,
        "created_at": plan.created_at.isoformat(),
        "status": plan.status,
        "snapshot": {"run_id": plan.snapshot_run_id, "started_at": plan.snapshot_at.isoformat()},
        "sources": [asdict(source) for source in plan.sources],
        "counts": plan.counts,
        "thresholds": [
            {
                "kind": check.kind.value,
                "count": check.count,
                "earlier_in_window": check.earlier,
                "share": round(check.share, 4),
                "max_count": check.limit.max_count,
                "max_share": check.limit.max_share,
                "over": check.over,
                "allowed_reason": check.allowed_reason,
            }
            for check in plan.checks
        ],
        "blocked": plan.blocked,
        "changes": plan_rows(plan),
    }


def write_plan_json(path: Path, plan: Plan) -> Path:
    """The plan as JSON."""
    with private_file(path) as handle:
        handle.write(json.dumps(plan_document(plan), indent=2, ensure_ascii=False) + "\n")
    return path


def write_error_reports(validation: Validation, mapping: Mapping, folder: Path) -> list[Path]:
    """For each file with invalid rows, ``<name>.errors.csv`` in ``folder``: the invalid rows with their
    original columns (made safe) plus the line and every problem, ready to fix and upload again."""
    written = []
    for file in validation.files:
        invalid = validation.invalid_lines(file.name)
        if invalid:
            written.append(_error_report(file, invalid, _phone_columns(mapping), folder))
    return written


def _error_report(file: CsvFile, invalid: dict[int, list[Problem]], phones: set[str], folder: Path) -> Path:
    width = len(file.header)
    rows = [
        [
            # A row of the wrong width is cut or padded to the header (its problem says so).
            *(
                _cell(cell, column_key(column) in phones)
                for column, cell in zip(file.header, row.cells + [""] * width, strict=False)
            ),
            str(row.line),
            "; ".join(problem.describe() for problem in invalid[row.line]),
        ]
        for row in file.rows
        if row.line in invalid
    ]
    # In the upload's delimiter (a workbook's report is comma-separated), so it opens as the upload did.
    header = [*file.header, *ERROR_COLUMNS]
    return write_csv(folder / f"{file.path.stem}.errors.csv", header, rows, file.delimiter or ",")


def _phone_columns(mapping: Mapping) -> set[str]:
    """The phone column, as `column_key` matches headers (the file may write it in another case)."""
    column = mapping.users.column("mobile_phone")
    return {column_key(column)} if column else set()


def _cell(value: str, phone: bool) -> str:
    return phone_cell(value) if phone else value
