"""The Dagster code location: every asset, check, job and schedule, with resources bound in one place."""

from __future__ import annotations

import dagster as dg

from pipelines.assets import ALL_ASSETS
from pipelines.bindings import client_resource, warehouse_resource
from pipelines.checks import sync_runs_fresh
from pipelines.hr.dagster import HR_JOBS, HR_SENSORS
from pipelines.jobs import full_refresh, nightly_sync, nightly_sync_schedule, weekly_full_refresh_schedule

defs = dg.Definitions(
    assets=ALL_ASSETS,
    asset_checks=[sync_runs_fresh],
    jobs=[nightly_sync, full_refresh, *HR_JOBS],
    schedules=[nightly_sync_schedule, weekly_full_refresh_schedule],
    sensors=HR_SENSORS,
    resources={"adm": client_resource(), "warehouse": warehouse_resource()},
)
