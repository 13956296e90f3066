"""Blocking checks on a tenant's staged data, before it is committed. A failed check stops the commit:
the warehouse stays as it was, the run is recorded as ``blocked_by_check`` and the check's description
gives the figures (``staged 1000, service total 1003``).

Each check is a plain function of the extract and the committed warehouse, free of Dagster; the tenant
sync asset turns the outcomes into Dagster check results of the table they judge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from pipelines.extract import LISTS, TenantExtract
from warehouse import reads


@dataclass(frozen=True)
class CheckOutcome:
    """One check's verdict on one table of the staged run."""

    table: str
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
    blocking: bool = True

    def as_record(self) -> dict[str, Any]:
        """JSON-ready form, as stored with the run in ``sync_runs.checks``."""
        return {
            "table": self.table,
            "check": self.name,
            "passed": self.passed,
            "description": self.description,
        }


Check = Callable[[TenantExtract, Path, str], CheckOutcome]
"""A check: the staged extract, the warehouse file (for what is committed already) and the tenant."""


@dataclass(frozen=True)
class CheckSpec:
    """A blocking check: the table it judges, its name, what it asserts, and the function that judges."""

    table: str
    name: str
    description: str
    run: Check


def row_count_matches_total(entity: str) -> Check:
    """Records staged, plus those the schema contract rejected, equal the list's final ``total``."""

    def check(extract: TenantExtract, warehouse: Path, tenant_id: str) -> CheckOutcome:
        report = extract.reports[entity]
        total, first, rejected = report.service_total, report.first_total, report.rejected
        passed = total is None or report.rows + rejected == total
        drifted = first is not None and total is not None and first != total
        description = (
            f"staged {report.rows}"
            + (f" + {rejected} rejected" if rejected else "")
            + f", service total {total}"
            + (f" (the list changed while it was read: page 1 said {first})" if drifted else "")
        )
        return CheckOutcome(
            entity,
            "row_count_matches_service_total",
            passed,
            description,
            {
                "staged": report.rows,
                "rejected": rejected,
                "service_total": total if total is not None else -1,
                "first_page_total": first if first is not None else -1,
                "mode": report.mode,
            },
        )

    return check


def rejected_within_threshold(entity: str) -> Check:
    """The records the schema contract rejected stay within the count and the share the settings allow."""

    def check(extract: TenantExtract, warehouse: Path, tenant_id: str) -> CheckOutcome:
        contract, report = extract.contract, extract.reports[entity]
        endpoint = LISTS[entity].endpoint
        rejections = contract.log.rejected_from(endpoint)
        total = report.service_total or report.rows + len(rejections)
        allowed = min(contract.reject_max_count, int(contract.reject_max_share * total))
        reasons = "; ".join(
            f"page {r.page} position {r.position} id {r.record_id or '(none)'}: {r.field} {r.rule}, "
            f"received {r.value}"
            for r in rejections[:3]
        )
        description = f"{len(rejections)} record(s) rejected, {allowed} allowed" + (
            f": {reasons}" if reasons else ""
        )
        return CheckOutcome(
            entity,
            "rejected_within_threshold",
            len(rejections) <= allowed,
            description,
            {"rejected": len(rejections), "allowed": allowed},
        )

    return check


def conformity(extract: TenantExtract) -> list[CheckOutcome]:
    """Per list, the deviations from the spec the tolerant contract accepted (a warning, not a stop)."""
    summary = extract.contract.log.summary()
    outcomes = []
    for entity, spec in LISTS.items():
        found = [row for row in summary if row["endpoint"] == spec.endpoint]
        records = sum(row["records"] for row in found)
        description = (
            "every record as the spec says"
            if not found
            else f"{records} deviation(s) tolerated: "
            + "; ".join(f"{row['field']} {row['kind']} x{row['records']}" for row in found[:5])
        )
        outcomes.append(
            CheckOutcome(
                entity, CONFORMITY_CHECK, not found, description, {"deviations": found}, blocking=False
            )
        )
    return outcomes


CONFORMITY_CHECK = "records_conform_to_spec"
LIMITS_CHECK = "limit_values_parse"
_NUMERIC_LIMITS = ("Currency", "Number", "Days", "Months", "Years", "Percentage")
"""Authority value types whose limit should be a number (``Authorized`` has none)."""


def limits_parse(extract: TenantExtract) -> CheckOutcome:
    """Staged authority limits of a numeric type whose value is not a number we can read (a warning: the
    row is kept with ``limit_number`` null)."""
    path = extract.staging / "decision_authorities.parquet"
    rows = (
        pq.read_table(path, columns=["value_type", "limit_value", "limit_number", "is_unlimited"]).to_pylist()
        if path.exists()
        else []
    )
    unread = [
        row["limit_value"]
        for row in rows
        if row["value_type"] in _NUMERIC_LIMITS and row["limit_number"] is None and not row["is_unlimited"]
    ]
    description = f"{len(unread)} numeric limit value(s) could not be read as numbers" + (
        f", e.g. {', '.join(repr(value) for value in sorted(set(map(str, unread)))[:5])}" if unread else ""
    )
    return CheckOutcome(
        "decision_authorities",
        LIMITS_CHECK,
        not unread,
        description,
        {"unread": len(unread), "examples": sorted(set(map(str, unread)))[:20]},
        blocking=False,
    )


def ids_unique(entity: str) -> Check:
    """No id is staged twice (the merge keys every table by tenant and id)."""

    def check(extract: TenantExtract, warehouse: Path, tenant_id: str) -> CheckOutcome:
        duplicates = _duplicates(extract.staging / f"{entity}.parquet")
        description = f"{len(duplicates)} id(s) staged twice" + (
            f": {', '.join(duplicates[:5])}" if duplicates else ""
        )
        return CheckOutcome(
            entity, "ids_unique", not duplicates, description, {"duplicate_ids": duplicates[:20]}
        )

    return check


def managers_resolve(extract: TenantExtract, warehouse: Path, tenant_id: str) -> CheckOutcome:
    """Every staged user's ``manager_id`` is a user staged now or already in the warehouse."""
    staged = extract.staging / "users.parquet"
    known = staged_values(staged, "id") | reads.column_values(warehouse, tenant_id, "users", "id")
    missing = sorted(staged_values(staged, "manager_id") - known)
    return CheckOutcome(
        "users",
        "manager_ids_resolve",
        not missing,
        f"{len(missing)} manager id(s) resolve to no user",
        {"unresolved_manager_ids": missing[:20]},
    )


def documents_have_revisions(extract: TenantExtract, warehouse: Path, tenant_id: str) -> CheckOutcome:
    """Every document of a staged decision has its revision ids pulled (now or by an earlier run)."""
    pulled = staged_values(
        extract.staging / "document_revisions.parquet", "document_id"
    ) | reads.column_values(warehouse, tenant_id, "document_revisions", "document_id")
    missing = sorted(staged_values(extract.staging / "decision_documents.parquet", "document_id") - pulled)
    return CheckOutcome(
        "document_revisions",
        "documents_have_revisions",
        not missing,
        f"{len(missing)} document(s) of staged decisions without revision ids",
        {"documents_without_revisions": missing[:20]},
    )


def _list_checks(entity: str) -> list[CheckSpec]:
    return [
        CheckSpec(
            entity,
            "row_count_matches_service_total",
            "Records staged equal the total the service reported.",
            row_count_matches_total(entity),
        ),
        CheckSpec(entity, "ids_unique", "No id is staged twice.", ids_unique(entity)),
        CheckSpec(
            entity,
            "rejected_within_threshold",
            "Records the schema contract rejected stay within ADM_REJECT_MAX_COUNT and ADM_REJECT_MAX_SHARE.",
            rejected_within_threshold(entity),
        ),
    ]


BLOCKING_CHECKS: list[CheckSpec] = [
    *(spec for entity in LISTS for spec in _list_checks(entity)),
    CheckSpec("users", "manager_ids_resolve", "Every manager id is a known user.", managers_resolve),
    CheckSpec(
        "document_revisions",
        "documents_have_revisions",
        "Every document of a staged decision has its revision ids pulled.",
        documents_have_revisions,
    ),
]
"""Every blocking check of a tenant sync, in the order they run."""


def run_checks(extract: TenantExtract, warehouse: Path, tenant_id: str) -> list[CheckOutcome]:
    """Every blocking check's outcome."""
    return [spec.run(extract, warehouse, tenant_id) for spec in BLOCKING_CHECKS]


def staged_values(path: Path, column: str) -> set[str]:
    """Distinct non-null values of one column of a staged table (empty if the table was not staged)."""
    if not path.exists():
        return set()
    values = pq.read_table(path, columns=[column]).column(column).to_pylist()
    return {str(value) for value in values if value is not None}


def _duplicates(path: Path) -> list[str]:
    if not path.exists():
        return []
    with duckdb.connect() as con:
        rows = con.execute(
            "SELECT id FROM read_parquet(?) GROUP BY id HAVING count(*) > 1 ORDER BY id", [str(path)]
        ).fetchall()
    return [str(row[0]) for row in rows]
