"""Dagster assets of the nightly extract, partitioned by tenant.

Each extract asset is named after the warehouse table it feeds and *stages* that table for the run (Parquet
under the run's staging folder). ``sync_runs`` then merges everything staged into the DuckDB warehouse in
one transaction and records the run. Blocking checks on the staged data run in between: if one fails,
``sync_runs`` does not run and the warehouse stays exactly as it was.
"""

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from pipelines.checks import (
    Check,
    documents_have_revisions,
    ids_unique,
    managers_resolve,
    row_count_matches_total,
    spec,
)
from pipelines.extract import (
    LISTS,
    ExtractContext,
    ExtractReport,
    extract_current_user_positions,
    extract_delegation_revisions,
    extract_document_revisions,
    extract_list,
)
from pipelines.tenants import tenant_partitions
from resources.dagster_resource import AdmClientResource
from resources.warehouse_resource import WarehouseResource
from warehouse import reads
from warehouse.commit import commit_run
from warehouse.schema import arrow_schema
from warehouse.staging import discard

WAREHOUSE_POOL = "duckdb_warehouse"
"""Dagster concurrency pool of the warehouse writer; give it a limit of 1 (see the README)."""


class ExtractConfig(dg.Config):
    """Run options of the extract assets."""

    full_refresh: bool = False
    """Read everything instead of what changed since the cursor; marks vanished records as deleted."""
    overlap_minutes: int = 10
    """How far before the cursor an incremental read starts, so that nothing written mid-run is missed."""


TABLE_DESCRIPTIONS = {
    "decisions": "Decisions (E8): one row per decision with its section, category, status and owner.",
    "decision_groups": "Groups each decision applies to.",
    "decision_authorities": "Authority limits of each decision; limit_number/limit_unit parse the value.",
    "decision_documents": "Documents attached to each decision.",
    "delegations": "Delegations (list extension).",
    "delegation_revisions": "Changelog revision ids of each delegation (E11); only new or changed ones.",
    "document_revisions": "Changelog revision ids of each document (E12), pulled for new or changed ones.",
    "users": "Users with their manager id (list extension).",
    "user_roles": "Roles of each user.",
    "user_positions": "Positions of each user.",
    "user_groups": "Groups of each user.",
    "groups": "Groups with their type and address columns (list extension).",
    "group_parents": "Parent links of the group tree.",
    "positions": "Positions (list extension).",
    "current_user_positions": "Positions of the user the credentials stand for (E9).",
}


def _spec(table: str, group: str, deps: tuple[str, ...] = ()) -> dg.AssetSpec:
    return dg.AssetSpec(
        table,
        group_name=group,
        description=TABLE_DESCRIPTIONS[table],
        deps=list(deps),
        metadata={"dagster/column_schema": _column_schema(table)},
        kinds={"duckdb"},
    )


def _column_schema(table: str) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[dg.TableColumn(field.name, str(field.type)) for field in arrow_schema(table)]
    )


Extract = Callable[[ExtractContext, Path], ExtractReport]
"""An extract: gets the run context and the warehouse file (for what is already committed)."""


def extract_asset(
    name: str,
    group: str,
    tables: tuple[str, ...],
    extract: Extract,
    checks: tuple[tuple[dg.AssetCheckSpec, Check], ...] = (),
    deps: tuple[str, ...] = (),
) -> dg.AssetsDefinition:
    """A tenant-partitioned multi-asset that stages ``tables`` and runs its blocking checks on them."""

    @dg.multi_asset(
        name=name,
        specs=[_spec(table, group, deps) for table in tables],
        partitions_def=tenant_partitions,
        can_subset=False,
        check_specs=[check_spec for check_spec, _ in checks],
        description=f"Stages {', '.join(tables)} for this run (committed by sync_runs).",
    )
    def _asset(
        context: dg.AssetExecutionContext,
        config: ExtractConfig,
        adm: AdmClientResource,
        warehouse: WarehouseResource,
    ) -> Iterator[dg.MaterializeResult[Any] | dg.AssetCheckResult]:
        tenant = context.partition_key
        with adm.client_for(tenant) as client:
            ctx = ExtractContext(
                client=client,
                tenant_id=tenant,
                staging=warehouse.staging(context.run.run_id, tenant),
                full_refresh=config.full_refresh,
                cursors=reads.cursors(warehouse.file, tenant),
                overlap=timedelta(minutes=config.overlap_minutes),
            )
            report = extract(ctx, warehouse.file)
        for warning in report.warnings:
            context.log.warning(warning)
        for table in tables:
            yield dg.MaterializeResult(asset_key=table, metadata=_metadata(report, table))
        for _, check in checks:
            yield check(ctx, report, warehouse.file)

    return _asset


def _metadata(report: ExtractReport, table: str) -> dict[str, Any]:
    return {
        "dagster/row_count": report.tables.get(table, 0),
        "mode": report.mode,
        "service_total": report.service_total if report.service_total is not None else -1,
        "api_calls": sum(report.api_calls.values()),
        "rate_limited_429": report.rate_limited,
    }


def list_asset(
    entity: str, group: str, extra: tuple[tuple[dg.AssetCheckSpec, Check], ...] = ()
) -> dg.AssetsDefinition:
    """The extract asset of one paged list, with the row-count and unique-id checks."""
    checks = (
        (
            spec(
                entity, "row_count_matches_service_total", "Rows staged equal the total the service reported."
            ),
            row_count_matches_total(entity),
        ),
        (spec(entity, "ids_unique", "No id is staged twice."), ids_unique(entity)),
        *extra,
    )
    return extract_asset(
        f"{entity}_extract", group, LISTS[entity].tables, lambda ctx, _: extract_list(ctx, entity), checks
    )


decisions_extract = list_asset("decisions", "decisions")
delegations_extract = list_asset("delegations", "delegations")
users_extract = list_asset(
    "users",
    "org",
    ((spec("users", "manager_ids_resolve", "Every manager id is a known user."), managers_resolve),),
)
groups_extract = list_asset("groups", "org")
positions_extract = list_asset("positions", "org")
current_user_positions_extract = extract_asset(
    "current_user_positions_extract",
    "org",
    ("current_user_positions",),
    lambda ctx, _: extract_current_user_positions(ctx),
)
delegation_revisions_extract = extract_asset(
    "delegation_revisions_extract",
    "delegations",
    ("delegation_revisions",),
    lambda ctx, _: extract_delegation_revisions(ctx),
    deps=("delegations",),
)
document_revisions_extract = extract_asset(
    "document_revisions_extract",
    "documents",
    ("document_revisions",),
    lambda ctx, warehouse: extract_document_revisions(
        ctx, reads.documents_never_pulled(warehouse, ctx.tenant_id)
    ),
    checks=(
        (
            spec(
                "document_revisions",
                "documents_have_revisions",
                "Every document of a staged decision has its revision ids pulled.",
            ),
            documents_have_revisions,
        ),
    ),
    deps=("decision_documents",),
)


STAGED_TABLES = tuple(TABLE_DESCRIPTIONS)


@dg.asset(
    deps=list(STAGED_TABLES),
    partitions_def=tenant_partitions,
    group_name="runs",
    pool=WAREHOUSE_POOL,
    kinds={"duckdb"},
    description="Commits the run: one transaction merges every staged table into the warehouse (current "
    "tables and SCD2 history), moves the extract cursors and adds this run's row to sync_runs.",
)
def sync_runs(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult[Any]:
    """Merge the run's staging into the warehouse in one transaction."""
    tenant = context.partition_key
    staging = warehouse.staging(context.run.run_id, tenant)
    summary = commit_run(warehouse.file, staging, context.run.run_id, tenant)
    discard(staging)
    changed = {
        table: counts
        for table, counts in summary.row_counts.items()
        if counts["inserted"] or counts["updated"] or counts["deleted"]
    }
    return dg.MaterializeResult(
        metadata={
            "mode": summary.mode,
            "api_calls": summary.api_calls_total,
            "rate_limited_429": summary.rate_limited,
            "retries": summary.retries,
            "row_counts": dg.MetadataValue.json(summary.row_counts),
            "changed_tables": dg.MetadataValue.json(changed),
            "warnings": dg.MetadataValue.json(summary.warnings),
        }
    )


EXTRACT_ASSETS = [
    decisions_extract,
    delegations_extract,
    delegation_revisions_extract,
    document_revisions_extract,
    users_extract,
    groups_extract,
    positions_extract,
    current_user_positions_extract,
]
ALL_ASSETS = [*EXTRACT_ASSETS, sync_runs]
