"""Jobs and schedules of the tenant sync.

The mode of a run is a job tag, not run config: tags reach every run of a job however it is launched
(the UI's launchpad, a schedule, Dagster's GraphQL API with no run config, ``dagster job execute``), where
a default run config is only the launchpad's. Each run carries its tenant as its partition, and the
instance's run queue (``pipelines/dagster.yaml``) runs at most one run per tenant at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import dagster as dg

from pipelines.assets import MODE_TAG
from pipelines.tenant_runs import FULL_REFRESH_JOB, NIGHTLY_JOB
from pipelines.tenant_tags import tenant_tags
from warehouse.read_modes import FULL, INCREMENTAL

__all__ = ["STEP_EXECUTOR", "sync_jobs", "sync_schedules"]

STEP_EXECUTOR = dg.multiprocess_executor.configured(
    {"start_method": {"forkserver": {}}}, name="multiprocess_forkserver"
)
"""How every job of the code location runs its steps (the `dg.Definitions`' executor: the sync jobs, the
implicit asset job that the UI's Materialize and ``dagster asset materialize`` launch, the HR and freshness
jobs): Dagster's multi-process executor, each step forked from a server process that imported the code
location once (Dagster's ``forkserver`` start method), instead of a new interpreter per step (its default,
``spawn``). A forked step process ends without the interpreter's teardown, which took 8 s of the 10 s
between a stopped run's last event and its end under ``dagster job execute`` on a busy host
(docs/operations.md, Stopping a run); and it starts without importing Dagster again."""


def sync_jobs(
    sync: dg.AssetsDefinition,
    freshness: dg.AssetChecksDefinition,
    partitions: dg.PartitionsDefinition[str],
    names: Mapping[str, str],
) -> list[dg.UnresolvedAssetJobDefinition]:
    """The incremental and the full-refresh job of the tenant sync. Its blocking checks run inside its step;
    the freshness check is left to its sensor, which evaluates it whether or not a sync succeeds. A run of
    a tenant's partition carries its `tenant_tags` (``names``: tenant id -> name), however it is launched
    (a schedule, a sensor, the launchpad, a backfill, ``execute_in_process``)."""
    selection = dg.AssetSelection.assets(sync) - dg.AssetSelection.checks(freshness)
    config = dg.PartitionedConfig(
        partitions,
        run_config_for_partition_key_fn=lambda _: {},
        tags_for_partition_key_fn=lambda tenant: tenant_tags(tenant, names),
    )
    return [
        dg.define_asset_job(
            NIGHTLY_JOB,
            selection=selection,
            config=config,
            tags={MODE_TAG: INCREMENTAL},
            description="Incremental sync of one tenant: what changed since the last committed run.",
        ),
        dg.define_asset_job(
            FULL_REFRESH_JOB,
            selection=selection,
            config=config,
            tags={MODE_TAG: FULL},
            description="Full sync of one tenant: re-reads everything; vanished records are marked deleted.",
        ),
    ]


def sync_schedules(
    tenants: list[str], nightly_cron: str, full_refresh_cron: str, service: bool
) -> list[dg.ScheduleDefinition]:
    """One run per tenant nightly (incremental) and weekly (full), in UTC. Both start running when the
    settings name a service (``service``): syncing is what a deployment is for, the month's API budget is
    projected from both (`pipelines.budget`), and only the full refresh finds deletions. With no service
    every sync would refuse, so they start stopped. (A schedule started or stopped in the UI stays so.)"""
    status = dg.DefaultScheduleStatus.RUNNING if service else dg.DefaultScheduleStatus.STOPPED
    return [
        _schedule("nightly_sync_schedule", NIGHTLY_JOB, nightly_cron, tenants, status),
        _schedule("weekly_full_refresh_schedule", FULL_REFRESH_JOB, full_refresh_cron, tenants, status),
    ]


def _schedule(
    name: str, job: str, cron: str, tenants: list[str], status: dg.DefaultScheduleStatus
) -> dg.ScheduleDefinition:
    description = f"One {job} run per tenant ({cron}, UTC)."

    @dg.schedule(
        name=name,
        job_name=job,
        cron_schedule=cron,
        execution_timezone="UTC",
        description=description,
        default_status=status,
    )
    def every_tenant(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
        stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "now"
        for tenant in tenants:
            yield dg.RunRequest(run_key=f"{job}:{tenant}:{stamp}", partition_key=tenant)

    return every_tenant
