"""The tenant sync as one Dagster step: a tenant-partitioned multi-asset, in the shape of Dagster's own
extract-load integrations (``@dlt_assets``, ``@sling_assets``).

The step extracts every list, pulls the revision ids, runs the blocking checks, commits in one transaction
and only then materializes the table assets: a green table asset means its rows are committed, and its
``dagster/row_count`` is what the table holds for the tenant. A failed check shows its figures, the run
is red and no table is materialized. Re-executing a run (from failure or not) reruns the whole tenant sync.

Selecting any table (``dagster asset materialize --select adm/users``) runs the whole tenant sync, because
a table alone cannot be committed consistently; every table the run committed is materialized, selected or
not.

Every materialization is a runtime event of the tenant's partition, not a step output (each asset is
``skippable``): an output adds two events and, for each upstream asset, a query for Dagster's data-version
provenance, which these assets do not use (they have no code versions, and all of them change in the one
step). That took a third to a half off what Dagster adds to a run (docs/benchmarks.md).

The mode is read from the run's tags, which every launch path carries (job tags reach runs launched from
the UI, a schedule, the GraphQL API or ``dagster job execute``): ``adm/mode=full`` reads everything.
"""

# No `from __future__ import annotations`: Dagster reads the annotations of the decorated functions.

import warnings
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from pipelines.check_names import CONFORMITY_CHECK, LIMITS_CHECK, parse_check_names
from pipelines.checks import BLOCKING_CHECKS, CheckOutcome
from pipelines.clients import AdmClientResource
from pipelines.failures import FINAL, attempt_run_id, headline, is_transient, retry_note, retry_wait_s
from pipelines.settings import NO_SERVICE, SettingsError, SyncSettings, configured_tenant
from pipelines.sync import SyncBlockedError, SyncOutcome, SyncRequest, SyncServices, sync_tenant
from pipelines.tenant_tags import tenant_tags
from pipelines.warehouse_resource import WarehouseResource
from warehouse.catalog import LISTS, PERSONAL_TABLES, TABLE_GROUPS
from warehouse.described import DescribedTable, described_tables, described_views
from warehouse.publish import Published
from warehouse.read_modes import FULL
from warehouse.runs import RUNS_TABLE, RunRecord

ASSET_PREFIX = "adm"
MODE_TAG = "adm/mode"
ALLOW_OVER_QUOTA_TAG = "adm/allow_over_quota"
MAX_RETRIES_TAG = "adm/max_retries"
"""Run tag: how many times a step that failed for a passing reason (a 5xx, a lost connection, 429s, a list
that kept changing) runs again in the same run (default ``ADM_MAX_RETRIES``; 0: never)."""
RETRY_WAIT_TAG = "adm/retry_wait_s"
"""Run tag: seconds before the first retry (default ``ADM_RETRY_WAIT_S``), doubled for each next one."""
WARN_ONLY_CHECKS_TAG = "adm/warn_only_checks"
"""Run tag: comma-separated blocking checks that only warn in this run."""
OWNERS = ["team:data-platform"]


TABLES: dict[str, str] = {**TABLE_GROUPS, RUNS_TABLE: "runs"}
"""Every table the tenant sync commits, in commit order, and its asset group: those of the list catalog
(`warehouse.catalog`) and the run log. What a table and each of its columns are comes from the data
dictionary (`warehouse.described`)."""


def table_key(table: str) -> dg.AssetKey:
    """The asset key of a warehouse table: prefixed, so it cannot collide in a shared deployment."""
    return dg.AssetKey([ASSET_PREFIX, table])


HISTORY = "_history"
VIEWS_GROUP = f"{ASSET_PREFIX}_views"
COPY_KEY = dg.AssetKey([ASSET_PREFIX, "analytics_copy"])
"""The copy for readers (``ADM_PUBLISH_PATH``), published after each commit."""


def histories() -> dict[str, str]:
    """Each committed table's history table (written in the same commit) -> the table."""
    described = described_tables()
    return {f"{table}{HISTORY}": table for table in TABLES if f"{table}{HISTORY}" in described}


def _spec(table: str) -> dg.AssetSpec:
    owner = histories().get(table, table)
    return _relation_spec(
        table,
        described_tables()[table],
        group_name=f"{ASSET_PREFIX}_{TABLES[owner]}",
        tags={"domain": "authority", **({"pii": ""} if owner in PERSONAL_TABLES else {})},
        deps=[table_key(owner)] if owner != table else [],
    )


def _relation_spec(name: str, described: DescribedTable, **spec: Any) -> dg.AssetSpec:
    """A table or view of the warehouse as an asset: its description and columns from the dictionary."""
    columns = [
        dg.TableColumn(column.name, column.data_type, column.description) for column in described.columns
    ]
    return dg.AssetSpec(
        table_key(name),
        description=described.description,
        owners=OWNERS,
        kinds={"duckdb"},
        metadata={"dagster/column_schema": dg.TableSchema(columns=columns), "dagster/table_name": name},
        skippable=True,
        **spec,
    )


def _derived_specs() -> list[dg.AssetSpec]:
    """The analyst views, each depending on what it reads, and the copy for readers, depending on every
    table and view: lineage from the service's lists to what analysts open."""
    relations = {*TABLES, *histories()}
    views = [
        _relation_spec(
            name,
            view,
            group_name=VIEWS_GROUP,
            tags={"domain": "authority"},
            deps=[table_key(read) for read in view.reads if read in relations or read in described_views()],
        )
        for name, view in described_views().items()
    ]
    copy = dg.AssetSpec(
        COPY_KEY,
        group_name=VIEWS_GROUP,
        description="The copy of the warehouse that analysts open (ADM_PUBLISH_PATH, default "
        "<warehouse>.analytics.duckdb), published after each commit; not materialized when a publish "
        "fails (readers then keep the previous copy).",
        owners=OWNERS,
        kinds={"duckdb"},
        tags={"domain": "authority", "pii": ""},
        deps=[table_key(name) for name in sorted({*relations, *described_views()})],
        skippable=True,
    )
    return [*views, copy]


def _check_specs(partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """Every check of the sync's step, partitioned like it: a result belongs to its tenant, so one
    tenant's pass never hides another's failure (the UI shows each partition's latest)."""

    def spec(table: str, name: str, description: str, blocking: bool = True) -> dg.AssetCheckSpec:
        return dg.AssetCheckSpec(
            name,
            asset=table_key(table),
            blocking=blocking,
            description=description,
            partitions_def=partitions,
        )

    # Partitioned checks are a Dagster preview (its behaviour is pinned by the lock file); without them the
    # latest result of any tenant would stand for all.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return (
            [spec(check.table, check.name, check.description) for check in BLOCKING_CHECKS]
            + [spec(table, CONFORMITY_CHECK, CONFORMITY_DESCRIPTION, blocking=False) for table in LISTS]
            + [spec("decision_authorities", LIMITS_CHECK, LIMITS_DESCRIPTION, blocking=False)]
        )


LIMITS_DESCRIPTION = (
    "Warns when numeric authority limits (currency, number, days...) hold a value that cannot be read as a "
    "number, or has more digits than limit_number holds exactly; the rows are kept with limit_number null."
)
CONFORMITY_DESCRIPTION = (
    "Warns when records deviated from the spec and the tolerant schema contract accepted them (null or "
    "missing fields, unknown enum values, numbers sent as text); the metadata counts them per field."
)


def tenant_sync_asset(partitions: dg.PartitionsDefinition, names: Mapping[str, str]) -> dg.AssetsDefinition:
    """The multi-asset of the whole tenant sync, one partition per tenant, with the resources the settings
    bind (`pipelines.bindings`: nothing a run's config could set). Its tables carry no freshness policy:
    Dagster's would count any tenant's commit and show Passing beside a stale tenant; each tenant's
    ``fresh_<tenant>`` check (`pipelines.freshness`) is the one freshness truth. Check results name the
    tenant as ``names`` (id -> name, ``ADM_TENANTS``) does."""

    @dg.multi_asset(
        name="adm_tenant_sync",
        specs=[_spec(table) for table in (*TABLES, *histories())] + _derived_specs(),
        check_specs=_check_specs(partitions),
        partitions_def=partitions,
        can_subset=True,
        description="Extracts every list of one tenant, pulls revision ids, checks and commits in one "
        "transaction; then materializes each table.",
    )
    def adm_tenant_sync(
        context: dg.AssetExecutionContext,
        adm: dg.ResourceParam[AdmClientResource],
        warehouse: dg.ResourceParam[WarehouseResource],
        sync_policy: dg.ResourceParam[SyncSettings],
    ) -> Iterator[dg.AssetMaterialization | dg.AssetCheckResult]:
        if not adm.settings.address_configured:  # the client the sync will use
            raise dg.Failure(description=NO_SERVICE)
        request = _request(context, partitions)
        _tag_run(context, tenant_tags(request.tenant_id, names))
        outcome = SyncOutcome(RunRecord(request.run_id, request.tenant_id, request.mode, datetime.now(UTC)))
        context.log.info(f"tenant {request.tenant_id}: {request.mode} sync")
        try:
            sync_tenant(request, SyncServices(adm, warehouse, sync_policy), outcome)
        except SyncBlockedError as error:
            yield from _check_results(context, request.tenant_id, names, outcome.checks)
            raise _failure(error, outcome) from None
        except FINAL as error:
            raise _failure(error, outcome) from None
        except Exception as error:
            if is_transient(error):
                raise _retry(context, sync_policy, error, outcome) from error
            # The run's headline is the product's one-line cause (as `sync_runs.error` stores it), not
            # Dagster's wrapper; the stack trace follows as its cause.
            raise _failure(error, outcome) from error
        finally:
            _fail_killed_runs(context, outcome.killed)
        for warning in outcome.record.warnings:
            context.log.warning(warning)
        yield from _materializations(request.tenant_id, outcome)
        yield from _check_results(context, request.tenant_id, names, outcome.checks)

    # Code references are a Dagster beta: they link the UI to this file, and their warning is not news here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.with_source_code_references([adm_tenant_sync])[0]  # type: ignore[return-value]


def _tag_run(context: dg.AssetExecutionContext, tags: Mapping[str, str]) -> None:
    """Give the run its tenant's ``tags`` when its launcher did not: ``dagster job execute``,
    ``execute_job`` or ``dagster asset materialize --partition`` (Dagster's implicit asset job, whose
    partitions carry no tags) with only a ``dagster/partition`` tag. A queued run has them from the run
    queue (`pipelines.run_queue`). The runs list finds the run by tenant."""
    missing = {key: value for key, value in tags.items() if context.run.tags.get(key) != value}
    if missing:
        context.instance.add_run_tags(context.run.run_id, missing)


def _retry(
    context: dg.AssetExecutionContext, policy: SyncSettings, error: Exception, outcome: SyncOutcome
) -> dg.RetryRequested | dg.Failure:
    """Run the step again after a passing failure, with a growing wait; the run's tags can change how often
    and how soon. The retry reuses the revision lists this attempt fetched (its journal), so it costs
    little more than the list pages. With no retry left, the step fails with the cause."""
    tags = context.run.tags
    retries = _tag_number(tags, MAX_RETRIES_TAG, policy.max_retries)
    wait = retry_wait_s(context.retry_number, retries, _tag_number(tags, RETRY_WAIT_TAG, policy.retry_wait_s))
    if wait is None:
        return _failure(error, outcome)
    context.log.warning(retry_note(error, wait))
    return dg.RetryRequested(max_retries=int(retries), seconds_to_wait=wait)


def _failure(error: Exception, outcome: SyncOutcome) -> dg.Failure:
    """The step's failure, headed by the run's one-line cause, with its figures."""
    return dg.Failure(description=headline(error, outcome.record.error), metadata=_run_metadata(outcome))


def _tag_number(tags: Mapping[str, str], tag: str, default: float) -> float:
    try:
        return max(0.0, float(tags.get(tag, default)))
    except ValueError:
        raise dg.Failure(description=f"run tag {tag}: {tags[tag]!r} is not a number") from None


def _fail_killed_runs(context: dg.AssetExecutionContext, run_ids: list[str]) -> None:
    """Mark failed the Dagster runs of syncs this run found killed: a killed process (a CLI run, a run
    worker) never reported its end, and its run would show STARTED forever."""
    for run_id in run_ids:
        run = context.instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            context.instance.report_run_failed(
                run, f"its process was killed; run {context.run.run_id} of the same tenant found it"
            )
            context.log.warning(f"run {run_id} of this tenant was killed: marked failed")


def _request(context: dg.AssetExecutionContext, partitions: dg.PartitionsDefinition) -> SyncRequest:
    """What to run, from the partition and the run's tags (present on every launch path)."""
    tags = context.run.tags
    # A retry of the step is a run of the sync of its own, with its own row (its calls count too).
    return SyncRequest(
        tenant_id=_tenant(context, partitions),
        run_id=attempt_run_id(context.run.run_id, context.retry_number),
        full_refresh=tags.get(MODE_TAG, "").strip().lower() == FULL,
        allow_over_quota=tags.get(ALLOW_OVER_QUOTA_TAG, "").strip().lower() in {"true", "1", "yes"},
        job_name=context.run.job_name,
        warn_only_checks=_warn_only(tags),
    )


def _warn_only(tags: Mapping[str, str]) -> frozenset[str]:
    try:
        return parse_check_names(tags.get(WARN_ONLY_CHECKS_TAG, ""))
    except ValueError as error:
        raise dg.Failure(description=f"run tag {WARN_ONLY_CHECKS_TAG}: {error}") from None


def _tenant(context: dg.AssetExecutionContext, partitions: dg.PartitionsDefinition) -> str:
    """The run's tenant: its partition. A run without one (``dagster job execute`` with no partition tag)
    is refused before it does anything: its checks are partitioned too, and would fail after its commit."""
    tenants = partitions.get_partition_keys()
    if context.has_partition_key:
        # A partition key can come from a run tag that Dagster does not check (dagster/partition: "*").
        try:
            return configured_tenant(str(context.partition_key), tenants)
        except SettingsError as error:
            raise dg.Failure(description=f"run partition: {error}; this run did nothing") from None
    raise dg.Failure(
        description=f"this run names no tenant (no partition); configured tenants: {', '.join(tenants)}; "
        "this run did nothing. Launch one run per tenant (the schedules do), e.g. "
        '--tags \'{"dagster/partition": "<tenant>"}\''
    )


def _materializations(tenant_id: str, outcome: SyncOutcome) -> Iterator[dg.AssetMaterialization]:
    """One materialization of the tenant's partition per committed table and history, per view (it shows
    the commit) and of the copy for readers when it was published."""
    assert outcome.commit is not None
    published = outcome.commit.published
    found = {table_key(table): _table_metadata(table, outcome) for table in (*TABLES, *histories())}
    found |= {table_key(view): {"run_id": outcome.record.run_id} for view in described_views()}
    if published is not None and published.error is None:
        found[COPY_KEY] = _publish_metadata(published)
    for key, metadata in found.items():
        yield dg.AssetMaterialization(asset_key=key, partition=tenant_id, metadata=metadata)


def _table_metadata(table: str, outcome: SyncOutcome) -> dict[str, Any]:
    assert outcome.commit is not None
    rows = outcome.commit.table_rows.get(table, 0)
    if table in histories():  # its versions: the merge counts the changes of its table
        return {"dagster/row_count": rows, "mode": outcome.record.mode}
    counts = outcome.commit.row_counts.get(table, {})
    metadata: dict[str, Any] = {
        "dagster/row_count": rows,
        "inserted": counts.get("inserted", 0),
        "updated": counts.get("updated", 0),
        "deleted": counts.get("deleted", 0),
        "unchanged": counts.get("unchanged", 0),
        "mode": outcome.record.mode,
    }
    if table != RUNS_TABLE:
        return metadata
    return metadata | _run_metadata(outcome) | _publish_metadata(outcome.commit.published)


def _publish_metadata(published: Published | None) -> dict[str, Any]:
    """Where the copy for readers was published and how long it took, or why it was not (the run's data
    is committed all the same, and readers keep the previous copy)."""
    if published is None:
        return {}
    if published.error is not None:
        return {"publish_error": dg.MetadataValue.text(published.error)}
    metadata: dict[str, Any] = {
        "published": dg.MetadataValue.path(str(published.target.path)),
        "publish_seconds": published.seconds,
    }
    if published.target.parquet:
        metadata["published_parquet"] = dg.MetadataValue.path(str(published.target.parquet_manifest))
    return metadata


def _run_metadata(outcome: SyncOutcome) -> dict[str, Any]:
    """The run's figures: API calls, 429s, retries, the revision lists it re-verified (and how many held new
    ids), the quota projection before the run and the month's after it, warnings and errors."""
    record = outcome.record
    metadata: dict[str, Any] = {
        "run_status": record.status.value,
        "api_calls": record.api_calls_total,
        "api_calls_by_endpoint": dg.MetadataValue.json(record.api_calls),
        "rate_limited_429": record.rate_limited,
        "retries": record.retries,
        "warnings": dg.MetadataValue.json(record.warnings),
        "deviations_tolerated": dg.MetadataValue.json(record.deviations),
        "records_rejected": len(record.rejections),
        "revision_recheck_days": record.recheck_days,
        "revisions_rechecked": record.revisions_rechecked,
        "rechecks_found_new": record.rechecks_found_new,
    }
    if outcome.projection is not None:
        metadata["api_budget"] = dg.MetadataValue.text(outcome.projection.describe())
        metadata["api_budget_figures"] = dg.MetadataValue.json(outcome.projection.as_metadata())
    if outcome.month is not None:
        metadata["api_month"] = dg.MetadataValue.text(outcome.month.describe())
        metadata["api_month_figures"] = dg.MetadataValue.json(outcome.month.as_metadata())
    return metadata


def _check_results(
    context: dg.AssetExecutionContext, tenant_id: str, names: Mapping[str, str], outcomes: list[CheckOutcome]
) -> Iterator[dg.AssetCheckResult]:
    selected = context.selected_asset_check_keys
    label = f"{names[tenant_id]} ({tenant_id})" if tenant_id in names else tenant_id
    for outcome in outcomes:
        key = dg.AssetCheckKey(table_key(outcome.table), outcome.name)
        if key in selected:
            # The check is the tenant's: its result says so, since the UI shows the latest of any tenant.
            yield dg.AssetCheckResult(
                asset_key=key.asset_key,
                check_name=outcome.name,
                passed=outcome.passed,
                description=f"tenant {label}: {outcome.description}",
                metadata={"tenant": tenant_id, **outcome.metadata},
                severity=dg.AssetCheckSeverity.ERROR if outcome.blocking else dg.AssetCheckSeverity.WARN,
            )
