"""Data checks on a run's staged tables, before they are committed. Each returns a Dagster check result;
the extract assets declare them blocking, so a failure stops ``sync_runs`` and the warehouse is untouched."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.extract import ExtractContext, ExtractReport, staged_ids
from resources.warehouse_resource import WarehouseResource
from warehouse import reads

Check = Callable[[ExtractContext, ExtractReport, Path], dg.AssetCheckResult]

FRESHNESS_MAX_AGE = timedelta(hours=26)
"""A nightly sync older than this is stale (a day plus slack for a slow run)."""


def row_count_matches_total(asset: str) -> Check:
    """Rows staged equal the ``total`` the service reported for the same query."""

    def check(ctx: ExtractContext, report: ExtractReport, warehouse: Path) -> dg.AssetCheckResult:
        passed = report.service_total is None or report.rows == report.service_total
        return dg.AssetCheckResult(
            asset_key=asset,
            check_name="row_count_matches_service_total",
            passed=passed,
            metadata={"rows": report.rows, "service_total": report.service_total or 0, "mode": report.mode},
        )

    return check


def ids_unique(asset: str) -> Check:
    """No id appears twice among the staged rows."""

    def check(ctx: ExtractContext, report: ExtractReport, warehouse: Path) -> dg.AssetCheckResult:
        duplicates = _duplicates(ctx.staging / f"{asset}.parquet")
        return dg.AssetCheckResult(
            asset_key=asset,
            check_name="ids_unique",
            passed=not duplicates,
            metadata={"duplicate_ids": duplicates[:20]},
        )

    return check


def managers_resolve(ctx: ExtractContext, report: ExtractReport, warehouse: Path) -> dg.AssetCheckResult:
    """Every staged user's ``manager_id`` is a user staged now or already in the warehouse."""
    known = staged_ids(ctx.staging / "users.parquet", "id") | reads.column_values(
        warehouse, ctx.tenant_id, "users", "id"
    )
    missing = sorted(staged_ids(ctx.staging / "users.parquet", "manager_id") - known)
    return dg.AssetCheckResult(
        asset_key="users",
        check_name="manager_ids_resolve",
        passed=not missing,
        metadata={"unresolved_manager_ids": missing[:20]},
    )


def documents_have_revisions(
    ctx: ExtractContext, report: ExtractReport, warehouse: Path
) -> dg.AssetCheckResult:
    """Every document of a staged decision has its revision ids pulled (now or by an earlier run)."""
    pulled = staged_ids(ctx.staging / "document_revisions.parquet", "document_id") | reads.column_values(
        warehouse, ctx.tenant_id, "document_revisions", "document_id"
    )
    missing = sorted(staged_ids(ctx.staging / "decision_documents.parquet", "document_id") - pulled)
    return dg.AssetCheckResult(
        asset_key="document_revisions",
        check_name="documents_have_revisions",
        passed=not missing,
        metadata={"documents_without_revisions": missing[:20]},
    )


def spec(asset: str, name: str, description: str) -> dg.AssetCheckSpec:
    """A blocking check spec."""
    return dg.AssetCheckSpec(name, asset=asset, blocking=True, description=description)


def _duplicates(path: Path) -> list[str]:
    if not path.exists():
        return []
    with duckdb.connect() as con:
        rows = con.execute(
            "SELECT id FROM read_parquet(?) GROUP BY id HAVING count(*) > 1 ORDER BY id", [str(path)]
        ).fetchall()
    return [str(row[0]) for row in rows]


@dg.asset_check(asset="sync_runs", description="The last successful sync of every tenant is recent.")
def sync_runs_fresh(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """Each tenant's latest committed run finished within ``FRESHNESS_MAX_AGE``."""
    with reads.read_only(warehouse.file) as con:
        rows = (
            con.execute(
                "SELECT tenant_id, max(finished_at) FROM sync_runs WHERE status = 'succeeded' GROUP BY ALL"
            ).fetchall()
            if con is not None
            else []
        )
    now = datetime.now(UTC)
    stale = {tenant: str(finished) for tenant, finished in rows if now - finished > FRESHNESS_MAX_AGE}
    return dg.AssetCheckResult(
        passed=bool(rows) and not stale,
        metadata={
            "tenants": len(rows),
            "stale": dg.MetadataValue.json(stale),
            "max_age_hours": FRESHNESS_MAX_AGE / timedelta(hours=1),
        },
    )
