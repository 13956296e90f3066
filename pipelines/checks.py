"""Blocking checks on a tenant's staged data, before it is committed. A failed check stops the commit:
the warehouse stays as it was, the run is recorded as ``blocked_by_check`` and the check's description
gives the figures (``staged 1000, service total 1003``) and names the records.

A check blocks only what would make the load wrong: a list not read to its end, an id staged twice,
more rejected records than allowed. What the service merely reports inconsistently is a warning: a
``total`` off from what a list read to its end held, a manager id or a document without revisions the
service cannot resolve. Each blocking check can be turned into a warning by name (``ADM_WARN_ONLY_CHECKS``
or the run tag ``adm/warn_only_checks``), for a night when an operator knows better.

Each check is a plain function of the extract and the committed warehouse, free of Dagster; the tenant
sync asset turns the outcomes into Dagster check results of the table they judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.check_names import (
    CONFORMITY_CHECK,
    DOCUMENTS_CHECK,
    IDS_UNIQUE_CHECK,
    LIMITS_CHECK,
    LIST_CHECKS,
    MANAGERS_CHECK,
    REJECTED_CHECK,
    ROW_COUNT_CHECK,
    TENANT_CHECKS,
)
from pipelines.extract import TenantExtract
from warehouse.catalog import LISTS
from warehouse.reads import CheckEvidence

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow.parquet and pyarrow.compute are imported where used: commands that write no Parquet (`hr plan`)
# then do without their 15 MB.


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


Check = Callable[[TenantExtract, CheckEvidence], CheckOutcome]
"""A check: the staged extract, and what the committed warehouse holds already that it compares with."""


@dataclass(frozen=True)
class CheckSpec:
    """A blocking check: the table it judges, its name, what it asserts, and the function that judges."""

    table: str
    name: str
    description: str
    run: Check


def row_count_matches_total(entity: str) -> Check:
    """Records staged, plus those the schema contract rejected, equal the list's final ``total``."""

    def check(extract: TenantExtract, committed: CheckEvidence) -> CheckOutcome:
        report = extract.reports[entity]
        total, first, rejected = report.service_total, report.first_total, report.rejected
        listed = report.rows + rejected - len(report.vanished)
        passed = total is None or listed == total
        drifted = first is not None and total is not None and first != total
        description = (
            f"staged {report.rows}"
            + (f" + {rejected} rejected" if rejected else "")
            + (f" - {len(report.vanished)} removed while read" if report.vanished else "")
            + f", service total {total}"
            + (f" (the list changed while it was read: page 1 said {first})" if drifted else "")
            + _reading(report.complete, report.reread, passed)
        )
        return CheckOutcome(
            entity,
            ROW_COUNT_CHECK,
            passed,
            description,
            {
                "staged": report.rows,
                "rejected": rejected,
                "removed_while_read": len(report.vanished),
                "service_total": total if total is not None else -1,
                "first_page_total": first if first is not None else -1,
                "read_to_end": report.complete,
                "read_again_the_same": report.reread,
                "mode": report.mode,
            },
            # A list read to its proven end holds what it holds: its total is only evidence.
            blocking=not report.complete,
        )

    return check


def rejected_within_threshold(entity: str) -> Check:
    """The records the schema contract rejected stay within the count and the share the settings allow."""

    def check(extract: TenantExtract, committed: CheckEvidence) -> CheckOutcome:
        contract, report = extract.contract, extract.reports[entity]
        rejections = contract.log.rejected_from(entity)
        # The list's size as read (its total is only evidence, and may be missing or off).
        total = report.rows + len(rejections)
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
            REJECTED_CHECK,
            len(rejections) <= allowed,
            description,
            {"rejected": len(rejections), "allowed": allowed},
        )

    return check


def conformity(extract: TenantExtract) -> list[CheckOutcome]:
    """Per list, the deviations from the spec the tolerant contract accepted (a warning, not a stop)."""
    summary = extract.contract.log.summary()
    outcomes = []
    for entity in LISTS:
        found = [row for row in summary if row["list"] == entity]
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


NUMERIC_LIMITS = ("Currency", "Number", "Days", "Months", "Years", "Percentage")
"""Authority value types whose limit should be a number (``Authorized`` has none)."""
_LIMIT_COLUMNS = ("value_type", "limit_value", "limit_number", "is_unlimited")
_NUMERIC_TYPE = "^(?:" + "|".join(re.escape(name) for name in NUMERIC_LIMITS) + ")$"
"""A ``value_type`` of `NUMERIC_LIMITS` as RE2 matches it (its ``$`` is the end of the text only)."""


def unread_limit_values(path: Path) -> list[str | None]:
    """The ``limit_value`` of each staged limit in the file ``path`` of a numeric type (`NUMERIC_LIMITS`),
    without a number and not unlimited (an unknown ``is_unlimited`` is not unlimited), in file order."""
    # Batch by batch with the file's own reader, never every limit at once, and each batch judged column by
    # column: Python per row took 0.5-0.7 s for the 200,000 limits of 100,000 decisions.
    return [value for batch in _staged_batches(path, _LIMIT_COLUMNS) for value in _unread_limits(batch)]


def _unread_limits(batch: pa.RecordBatch) -> list[str | None]:
    import pyarrow.compute as pc

    # No Arrow value is built from Python (`pa.array`, `pa.scalar`): pyarrow imports pandas to do that.
    numeric = pc.match_substring_regex(batch.column("value_type"), pattern=_NUMERIC_TYPE)
    unlimited = batch.column("is_unlimited")
    limited = pc.or_kleene(pc.invert(unlimited), pc.is_null(unlimited))
    unread = pc.and_(pc.and_(numeric, pc.is_null(batch.column("limit_number"))), limited)
    values: list[str | None] = pc.filter(batch.column("limit_value"), unread).to_pylist()
    return values


def limits_parse(extract: TenantExtract) -> CheckOutcome:
    """Staged authority limits of a numeric type whose value is not a number we can read (a warning: the
    row is kept with ``limit_number`` null)."""
    unread = unread_limit_values(extract.staging / "decision_authorities.parquet")
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

    def check(extract: TenantExtract, committed: CheckEvidence) -> CheckOutcome:
        duplicates = _duplicates(extract.staging / f"{entity}.parquet")
        description = f"{len(duplicates)} id(s) staged twice" + (
            f": {', '.join(duplicates[:5])}" if duplicates else ""
        )
        return CheckOutcome(
            entity, IDS_UNIQUE_CHECK, not duplicates, description, {"duplicate_ids": duplicates[:20]}
        )

    return check


def _reading(complete: bool, reread: bool, passed: bool) -> str:
    if passed:
        return ""
    if complete and reread:
        return (
            "; the list was read to its end twice and listed the same records both times, so nothing moved"
            " between the reads and the total is the service's own count: a warning"
        )
    if complete:
        return "; the list was read to its end, so the total is only evidence: a warning"
    return "; the read did not reach the list's end"


def managers_resolve(extract: TenantExtract, committed: CheckEvidence) -> CheckOutcome:
    """Every staged user's ``manager_id`` is a user staged now or already in the warehouse (a warning: a
    manager the user list does not show is the service's to resolve, and the user is loaded as sent)."""
    staged = extract.staging / "users.parquet"
    known = staged_values(staged, "id") | committed.user_ids
    missing = sorted(staged_values(staged, "manager_id") - known)
    return CheckOutcome(
        "users",
        MANAGERS_CHECK,
        not missing,
        f"{len(missing)} manager id(s) resolve to no user" + _named(missing),
        {"unresolved_manager_ids": missing[:20]},
        blocking=False,
    )


def documents_have_revisions(extract: TenantExtract, committed: CheckEvidence) -> CheckOutcome:
    """Every document of a staged decision had its revision list checked (now or by an earlier run); a
    warning naming the documents, since the service may list a document it cannot show."""
    checked = (
        staged_values(extract.staging / "revision_checks.parquet", "parent_id") | committed.checked_documents
    )
    cited = {
        doc
        for doc in staged_values(extract.staging / "decision_documents.parquet", "document_id")
        if doc.strip()
    }
    missing = sorted(cited - checked)
    return CheckOutcome(
        "document_revisions",
        DOCUMENTS_CHECK,
        not missing,
        f"{len(missing)} document(s) of staged decisions without a revision check" + _named(missing),
        {"documents_without_revisions": missing[:20]},
        blocking=False,
    )


def _named(ids: list[str]) -> str:
    return f": {', '.join(ids[:5])}" + (f" and {len(ids) - 5} more" if len(ids) > 5 else "") if ids else ""


_LIST_JUDGES: dict[str, Callable[[str], Check]] = {
    ROW_COUNT_CHECK: row_count_matches_total,
    IDS_UNIQUE_CHECK: ids_unique,
    REJECTED_CHECK: rejected_within_threshold,
}
_TENANT_JUDGES: dict[str, Check] = {
    MANAGERS_CHECK: managers_resolve,
    DOCUMENTS_CHECK: documents_have_revisions,
}

BLOCKING_CHECKS: list[CheckSpec] = [
    *(
        CheckSpec(entity, name, description, _LIST_JUDGES[name](entity))
        for entity in LISTS
        for name, description in LIST_CHECKS.items()
    ),
    *(
        CheckSpec(table, name, description, _TENANT_JUDGES[name])
        for name, (table, description) in TENANT_CHECKS.items()
    ),
]
"""Every blocking check of a tenant sync, in the order they run."""


def run_checks(
    extract: TenantExtract, committed: CheckEvidence, warn_only: frozenset[str] = frozenset()
) -> list[CheckOutcome]:
    """Every blocking check's outcome; those named in ``warn_only`` only warn."""
    outcomes = [spec.run(extract, committed) for spec in BLOCKING_CHECKS]
    return [_warning(outcome) if outcome.name in warn_only else outcome for outcome in outcomes]


def _warning(outcome: CheckOutcome) -> CheckOutcome:
    if outcome.passed or not outcome.blocking:
        return outcome
    return replace(
        outcome,
        blocking=False,
        description=f"{outcome.description} (a warning only: named in the warn-only checks)",
    )


def staged_values(path: Path, column: str) -> set[str]:
    """Distinct non-null values of one column of a staged table (empty if the table was not staged)."""
    if not path.exists():
        return set()
    return {str(value) for value in _staged_column(path, column).to_pylist() if value is not None}


def _staged_batches(path: Path, columns: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of a staged file batch by batch, with the file's own reader (see `_staged_column`);
    none when the list staged no such file."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).iter_batches(columns=list(columns)) if path.exists() else iter(())


def _staged_column(path: Path, column: str) -> pa.ChunkedArray:
    """One column of a staged file, read with the file's own reader: `pq.read_table` loads pyarrow.dataset,
    which imports pandas (45-65 MB of a run's peak, with staging's)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read(columns=[column]).column(column)


def _duplicates(path: Path) -> list[str]:
    """Ids staged more than once (Arrow counts them: no database needed for one column)."""
    import pyarrow.compute as pc

    if not path.exists():
        return []
    counts = pc.value_counts(_staged_column(path, "id"))
    # Compared in Python: a comparison with a Python number builds an Arrow scalar, which imports pandas.
    found = zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)
    return sorted(str(value) for value, count in found if count > 1)
