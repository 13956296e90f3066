"""Freshness per tenant: a stalled sync turns red within a day, whether or not any run succeeds.

`tenant_sync_fresh` is a partitioned asset check of ``adm/sync_runs`` (one partition per tenant) that
passes when the tenant's last committed sync finished within ``ADM_FRESHNESS_HOURS`` (26 by default: a
nightly sync plus slack). A check that only ran after a successful commit would never see a tenant whose
syncs keep failing, or one that never synced; so `freshness_sensor` evaluates it for every tenant on its
own schedule. The table assets also carry a `FreshnessPolicy` of the same window, which Dagster's UI
shows per asset (any tenant's commit counts there; the check is the per-tenant truth).

Partitioned asset checks are a Dagster preview feature: their definition warns once, which is silenced
here on purpose (and said in the README).
"""

# No `from __future__ import annotations`: Dagster reads the annotations of the decorated functions.

import warnings
from datetime import UTC, datetime, timedelta

import dagster as dg

from pipelines.assets import table_key
from resources.warehouse_resource import WarehouseResource
from warehouse.runs import last_success

CHECK_NAME = "tenant_sync_fresh"
SENSOR_INTERVAL_S = 3600
"""How often the sensor evaluates every tenant's freshness: staleness shows within an hour of the limit."""


def freshness_check(partitions: dg.PartitionsDefinition, max_age: timedelta) -> dg.AssetChecksDefinition:
    """The per-tenant freshness check of ``adm/sync_runs``."""
    hours = max_age / timedelta(hours=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)

        @dg.asset_check(
            asset=table_key("sync_runs"),
            name=CHECK_NAME,
            partitions_def=partitions,
            description=f"The tenant's last committed sync finished within {hours:g} h.",
        )
        def tenant_sync_fresh(
            context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
        ) -> dg.AssetCheckResult:
            tenant = context.partition_key
            return judge(last_success(warehouse.file, tenant), max_age, datetime.now(UTC))

    return tenant_sync_fresh


def judge(last: datetime | None, max_age: timedelta, now: datetime) -> dg.AssetCheckResult:
    """Pass when ``last`` is within ``max_age`` of ``now``; the description says how old it is."""
    hours = max_age / timedelta(hours=1)
    if last is None:
        return dg.AssetCheckResult(passed=False, description="the tenant has never been synced")
    age = now - last
    return dg.AssetCheckResult(
        passed=age <= max_age,
        description=f"last committed sync {age / timedelta(hours=1):.1f} h ago (limit {hours:g} h)",
        metadata={
            "last_success": dg.MetadataValue.timestamp(last),
            "age_hours": round(age / timedelta(hours=1), 2),
        },
    )


def freshness_sensor(check: dg.AssetChecksDefinition, tenants: list[str]) -> dg.SensorDefinition:
    """Evaluates the freshness check of every tenant once an interval, whatever the syncs do."""

    @dg.sensor(
        name="tenant_freshness_sensor",
        minimum_interval_seconds=SENSOR_INTERVAL_S,
        asset_selection=dg.AssetSelection.checks(check),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Evaluates tenant_sync_fresh for every tenant each hour, so a failing or never-run sync "
        "turns red even when no run succeeds.",
    )
    def tenant_freshness_sensor(context: dg.SensorEvaluationContext) -> list[dg.RunRequest]:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H")
        key = dg.AssetCheckKey(table_key("sync_runs"), CHECK_NAME)
        return [
            dg.RunRequest(run_key=f"fresh:{tenant}:{stamp}", asset_check_keys=[key], partition_key=tenant)
            for tenant in tenants
        ]

    return tenant_freshness_sensor
