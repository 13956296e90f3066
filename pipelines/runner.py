"""Run the tenant sync's jobs in this process, as the CLI and the HR workflow do: the code location's
own jobs, on the Dagster instance of ``DAGSTER_HOME`` when one is set (so the runs show in its history),
else on a temporary one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import dagster as dg

from pipelines.assets import ALLOW_OVER_QUOTA_TAG
from pipelines.jobs import FULL_REFRESH_JOB, NIGHTLY_JOB

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
"""Dagster's console logger says nothing: the CLI prints its own summary and one line per failure."""
VERBOSE_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass(frozen=True)
class TenantRun:
    """The outcome of one tenant's run."""

    tenant_id: str
    run_id: str
    success: bool
    error: str | None


@contextmanager
def cli_instance() -> Iterator[dg.DagsterInstance]:
    """The instance of ``DAGSTER_HOME`` when set (runs land in its history), else a temporary one."""
    if os.environ.get("DAGSTER_HOME"):
        with dg.DagsterInstance.get() as instance:
            yield instance
    else:
        with dg.DagsterInstance.ephemeral() as instance:
            yield instance


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
    job = defs.resolve_job_def(FULL_REFRESH_JOB if full_refresh else NIGHTLY_JOB)
    result = job.execute_in_process(
        partition_key=tenant_id,
        instance=instance,
        tags={ALLOW_OVER_QUOTA_TAG: "true"} if allow_over_quota else None,
        run_config=VERBOSE_LOGS if verbose else QUIET_LOGS,
        raise_on_error=False,
    )
    return TenantRun(
        tenant_id, result.run_id, result.success, None if result.success else first_error(result)
    )


def first_error(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step's error, in one line where the error is one."""
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error:
            error = event.step_failure_data.error
            cause = error.cause or error
            return str(cause.message).strip()
    return "the run failed"
