"""Run the tenant sync's jobs in this process on a Dagster instance, as the CLI and the HR workflow do when
``DAGSTER_HOME`` names one (`pipelines.tenant_runs`): the code location's own jobs, so the runs show in the
instance's history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import dagster as dg

from pipelines.assets import ALLOW_OVER_QUOTA_TAG
from pipelines.clients import AdmClientResource
from pipelines.location import sync_definitions
from pipelines.settings import SyncSettings
from pipelines.tenant_runs import RunTenant, TenantRun, job_name
from pipelines.warehouse_resource import WarehouseResource

__all__ = ["QUIET_LOGS", "VERBOSE_LOGS", "dagster_runner", "first_error", "run_tenant"]

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
"""Dagster's console logger says nothing: the CLI prints its own summary and one line per failure."""
VERBOSE_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@contextmanager
def dagster_runner(
    settings: SyncSettings,
    adm: AdmClientResource | None = None,
    warehouse: WarehouseResource | None = None,
    *,
    verbose: bool = False,
) -> Iterator[RunTenant]:
    """Runs of the settings' sync jobs (``adm`` and ``warehouse`` replace their resources) on the instance
    of ``DAGSTER_HOME``, with Dagster's log at INFO with ``verbose``."""
    replaced = {name: resource for name, resource in (("adm", adm), ("warehouse", warehouse)) if resource}
    defs = sync_definitions(settings, replaced)
    with dg.DagsterInstance.get() as instance:
        yield partial(run_tenant, defs, instance=instance, verbose=verbose)


def run_tenant(
    defs: dg.Definitions,
    tenant_id: str,
    instance: dg.DagsterInstance,
    *,
    full_refresh: bool = False,
    allow_over_quota: bool = False,
    verbose: bool = False,
) -> TenantRun:
    """Run one tenant's sync job (``nightly_sync`` or ``full_refresh``); a failure is reported, not raised."""
    job = defs.resolve_job_def(job_name(full_refresh))
    result = job.execute_in_process(
        partition_key=tenant_id,
        instance=instance,
        tags={ALLOW_OVER_QUOTA_TAG: "true"} if allow_over_quota else None,
        run_config=VERBOSE_LOGS if verbose else QUIET_LOGS,
        raise_on_error=False,
    )
    error = None if result.success else first_error(result)
    retries = sum(
        1 for event in result.all_events if event.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY
    )
    return TenantRun(tenant_id, result.run_id, result.success, error, tries=1 + retries)


def first_error(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step's error, in one line where the error is one: a `dg.Failure`'s own words (its
    description; the error's message would start with Dagster's class path)."""
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        failure = event.step_failure_data
        if failure.user_failure_data is not None and failure.user_failure_data.description:
            return failure.user_failure_data.description.strip()
        if failure.error:
            error = failure.error
            cause = error.cause or error
            return str(cause.message).strip()
    return "the run failed"
