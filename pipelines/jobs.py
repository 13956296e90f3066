"""Jobs and schedules of the nightly extract."""

from __future__ import annotations

import os
from collections.abc import Iterator

import dagster as dg

from pipelines.assets import EXTRACT_ASSETS, ExtractConfig
from pipelines.tenants import configured_tenants

NIGHTLY_CRON = os.environ.get("ADM_NIGHTLY_CRON", "0 2 * * *")
"""When the nightly sync runs (UTC); ``ADM_NIGHTLY_CRON`` overrides it."""
WEEKLY_FULL_REFRESH_CRON = os.environ.get("ADM_FULL_REFRESH_CRON", "0 3 * * 0")
"""When the weekly full refresh runs (UTC, Sunday 03:00 by default)."""

nightly_sync = dg.define_asset_job(
    "nightly_sync",
    selection=dg.AssetSelection.all(),
    description="Incremental extract of every tenant partition into the DuckDB warehouse.",
)

full_refresh = dg.define_asset_job(
    "full_refresh",
    selection=dg.AssetSelection.all(),
    description="Re-read everything; records that disappeared are marked deleted in history.",
    config=dg.RunConfig(ops={asset.op.name: ExtractConfig(full_refresh=True) for asset in EXTRACT_ASSETS}),
)


def _every_tenant(context: dg.ScheduleEvaluationContext, job: str) -> Iterator[dg.RunRequest]:
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "now"
    for tenant in configured_tenants():
        yield dg.RunRequest(run_key=f"{job}:{tenant}:{stamp}", partition_key=tenant)


@dg.schedule(job=nightly_sync, cron_schedule=NIGHTLY_CRON, execution_timezone="UTC")
def nightly_sync_schedule(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
    """One nightly run per tenant."""
    yield from _every_tenant(context, "nightly_sync")


@dg.schedule(job=full_refresh, cron_schedule=WEEKLY_FULL_REFRESH_CRON, execution_timezone="UTC")
def weekly_full_refresh_schedule(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
    """One weekly full refresh per tenant."""
    yield from _every_tenant(context, "full_refresh")
