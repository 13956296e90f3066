"""Freshness per tenant: a stalled sync turns red within a day, whether or not any run succeeds.

Each configured tenant has its own asset check on ``adm/tenant_freshness``, ``fresh_<tenant>`` (its name
from ``ADM_TENANTS``, else its id), that passes when
the tenant's last committed sync finished within ``ADM_FRESHNESS_HOURS`` (26 by default: a nightly sync
plus slack). A check that only ran after a successful commit would never see a tenant whose syncs keep
failing, or one that never synced; so the checks have a job of their own, `tenant_freshness`, which
`tenant_freshness_sensor` launches every hour. The checks are the one freshness truth: the table assets
carry no Dagster `FreshnessPolicy`, which would count any tenant's commit and show Passing beside a
failed check of a stale tenant.

``adm/tenant_freshness`` is an asset that nothing materializes (downstream of ``adm/sync_runs``, from which
it is judged). Dagster's UI shows a check's result for its asset's latest materialization: on
``adm/sync_runs``, which every sync materializes, each sync of any tenant turned every tenant's freshness
check back to "Not evaluated" until the sensor's next run, and hid a stale tenant's failure.

One check per tenant rather than one partitioned check: Dagster's partitioned asset checks are a preview
that cannot run in a job of their own.
"""

# No `from __future__ import annotations`: Dagster reads the annotations of the decorated functions.

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

import dagster as dg
from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType

from pipelines.assets import ASSET_PREFIX, OWNERS, TABLES, table_key
from pipelines.settings import tenant_variable_suffix
from pipelines.warehouse_resource import WarehouseResource
from warehouse.runs import RUNS_TABLE, last_success

FRESHNESS_JOB = "tenant_freshness"
FRESHNESS_KEY = dg.AssetKey([ASSET_PREFIX, "tenant_freshness"])
"""The asset the freshness checks judge: never materialized, so their latest results always show."""
SENSOR_INTERVAL_S = 3600
"""How often the sensor evaluates every tenant's freshness: staleness shows within an hour of the limit."""


def check_names(tenants: list[str], names: Mapping[str, str]) -> dict[str, str]:
    """Each tenant's freshness check name -> the tenant: ``fresh_<name>`` when ``ADM_TENANTS`` names it
    (``names``: id -> name), else ``fresh_<id>`` (check names allow letters, digits and underscores; a
    name that two tenants would share falls back to the ids)."""
    by_name = {tenant: _check_name(names.get(tenant) or tenant) for tenant in tenants}
    shared = {name for name in by_name.values() if list(by_name.values()).count(name) > 1}
    return {(_check_name(tenant) if name in shared else name): tenant for tenant, name in by_name.items()}


def _check_name(label: str) -> str:
    return "fresh_" + re.sub(r"[^a-z0-9_]", "_", tenant_variable_suffix(label).lower())


def freshness_asset() -> dg.AssetSpec:
    """The asset of the tenants' freshness, which only its checks evaluate (see the module docstring)."""
    return dg.AssetSpec(
        FRESHNESS_KEY,
        deps=[table_key(RUNS_TABLE)],
        description="How recently each tenant last committed a sync: one fresh_<tenant> check per tenant, "
        "evaluated hourly by tenant_freshness_sensor. Judged from adm/sync_runs; never materialized.",
        group_name=f"{ASSET_PREFIX}_{TABLES[RUNS_TABLE]}",  # beside adm/sync_runs
        owners=OWNERS,
    )


def freshness_checks(
    tenants: list[str],
    max_age: timedelta,
    schedules: list[dg.ScheduleDefinition],
    tenant_names: Mapping[str, str],
) -> dg.AssetChecksDefinition:
    """One freshness check of `FRESHNESS_KEY` per tenant (`check_names`), evaluated together; each says
    so (and the run's log warns) when any of the tenant sync's ``schedules`` is stopped: no sync of it
    will run."""
    hours = max_age / timedelta(hours=1)
    names = check_names(tenants, tenant_names)
    specs = [
        dg.AssetCheckSpec(
            name,
            asset=FRESHNESS_KEY,
            description=f"Tenant {_label(tenant, tenant_names)}: its last committed sync finished within "
            f"{hours:g} h.",
        )
        for name, tenant in names.items()
    ]

    @dg.multi_asset_check(specs=specs, name="tenant_sync_fresh", can_subset=True)
    def tenant_sync_fresh(
        context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[WarehouseResource]
    ) -> Iterator[dg.AssetCheckResult]:
        now = datetime.now(UTC)
        stopped = stopped_schedules(context.instance, schedules)
        if stopped:
            context.log.warning(_unscheduled(stopped))
        for key in context.selected_asset_check_keys:
            tenant = names[key.name]
            result = judge(key, last_success(warehouse.file, tenant), max_age, now)
            yield (
                result._replace(description=f"{result.description}; {_unscheduled(stopped)}")
                if stopped
                else result
            )

    return tenant_sync_fresh


def _label(tenant_id: str, names: Mapping[str, str]) -> str:
    name = names.get(tenant_id)
    return f"{name} ({tenant_id})" if name else tenant_id


def stopped_schedules(instance: dg.DagsterInstance, schedules: list[dg.ScheduleDefinition]) -> list[str]:
    """The names of the ``schedules`` that will not run: stopped in the UI, or stopped by default and never
    started."""
    states = {
        state.instigator_name: state.status
        for state in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
    }
    stopped = []
    for schedule in schedules:
        status = states.get(schedule.name, InstigatorStatus.DECLARED_IN_CODE)
        if status == InstigatorStatus.DECLARED_IN_CODE:
            running = schedule.default_status == dg.DefaultScheduleStatus.RUNNING
        else:
            running = status == InstigatorStatus.RUNNING
        if not running:
            stopped.append(schedule.name)
    return stopped


def _unscheduled(stopped: list[str]) -> str:
    return (
        f"{', '.join(stopped)} stopped: no such sync of any tenant will run until it is started "
        "(Automation in Dagster's UI)"
    )


def judge(
    key: dg.AssetCheckKey, last: datetime | None, max_age: timedelta, now: datetime
) -> dg.AssetCheckResult:
    """Pass when ``last`` is within ``max_age`` of ``now``; the description says how old it is."""
    hours = max_age / timedelta(hours=1)
    if last is None:
        return dg.AssetCheckResult(
            asset_key=key.asset_key,
            check_name=key.name,
            passed=False,
            description="the tenant has no committed sync",
        )
    age = now - last
    return dg.AssetCheckResult(
        asset_key=key.asset_key,
        check_name=key.name,
        passed=age <= max_age,
        description=f"last committed sync {age / timedelta(hours=1):.1f} h ago (limit {hours:g} h)",
        metadata={
            "last_success": dg.MetadataValue.timestamp(last),
            "age_hours": round(age / timedelta(hours=1), 2),
        },
    )


def freshness_job(checks: dg.AssetChecksDefinition) -> "dg.UnresolvedAssetJobDefinition":
    """The job that evaluates every tenant's freshness check, and nothing else."""
    return dg.define_asset_job(
        FRESHNESS_JOB,
        selection=dg.AssetSelection.checks(checks),
        description="Evaluates every tenant's freshness check; launched hourly by tenant_freshness_sensor.",
    )


def freshness_sensor(job: "dg.UnresolvedAssetJobDefinition") -> dg.SensorDefinition:
    """Launches the freshness job once an interval, whatever the syncs do."""

    @dg.sensor(
        name="tenant_freshness_sensor",
        minimum_interval_seconds=SENSOR_INTERVAL_S,
        job=job,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Evaluates every tenant's freshness check each hour, so a failing or never-run sync "
        "turns red even when no run succeeds.",
    )
    def tenant_freshness_sensor(context: dg.SensorEvaluationContext) -> dg.RunRequest:
        return dg.RunRequest(run_key=f"fresh:{datetime.now(UTC):%Y-%m-%dT%H}")

    return tenant_freshness_sensor
