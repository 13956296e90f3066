"""The tenant sync's part of the Dagster code location, built from the settings.

``definitions.py`` (what Dagster loads) and the CLI both build it here, so ``authority-sync extract`` runs
exactly the asset, checks and jobs that ``dagster dev`` shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from pipelines.assets import tenant_sync_asset
from pipelines.bindings import resources as bound_resources
from pipelines.freshness import freshness_asset, freshness_checks, freshness_job, freshness_sensor
from pipelines.jobs import STEP_EXECUTOR, sync_jobs, sync_schedules
from pipelines.settings import SyncSettings


def sync_definitions(settings: SyncSettings, resources: Mapping[str, Any] | None = None) -> dg.Definitions:
    """The tenant sync asset, its checks, jobs, schedules and freshness sensor, with the resources the
    settings describe (``resources`` replaces some of them: an op passing its own, say). With no service
    address configured the definitions load (the UI shows them) and every sync refuses in one line."""
    tenants = settings.sync_tenants
    partitions = dg.StaticPartitionsDefinition(tenants)
    bound = {
        name: _without_config(resource)
        for name, resource in (bound_resources(settings) | dict(resources or {})).items()
    }
    sync = tenant_sync_asset(partitions, settings.tenant_names)
    schedules = sync_schedules(
        tenants, settings.nightly_cron, settings.full_refresh_cron, settings.address_configured
    )
    fresh = freshness_checks(tenants, settings.freshness, schedules, settings.tenant_names)
    check_job = freshness_job(fresh)
    return dg.Definitions(
        assets=[sync, freshness_asset()],
        asset_checks=[fresh],
        jobs=[*sync_jobs(sync, fresh, partitions, settings.tenant_names), check_job],
        schedules=schedules,
        sensors=[freshness_sensor(check_job)],
        resources=bound,
        executor=STEP_EXECUTOR,
    )


def _without_config(resource: Any) -> Any:
    """``resource`` as a resource with no config: a run config giving it any is refused by Dagster (a
    launchpad copy of values the operator has changed since cannot reach a run)."""
    if isinstance(resource, dg.ResourceDefinition):
        return resource
    return dg.ResourceDefinition(resource_fn=lambda _: resource, config_schema={})
