"""Run the tenant sync in this process, as the CLI (``authority-sync extract``, the demo) and the HR
workflow's refresh after an apply do.

With ``DAGSTER_HOME`` set, each run is a run of the code location's own job on that Dagster instance, so it
shows in the instance's history (`pipelines.runner`). Without it no instance would keep the run, so the
sync runs directly (`pipelines.sync.sync_tenant`, what the job's step runs) without loading Dagster, which
costs seconds per process and per run. A direct run gives what a person at the command line gets from the
job: the job's name in the run's ``sync_runs`` row, the retries of a passing failure with the same waits
(`pipelines.failures`), the same one-line failure, the run's warnings and the failure's stack trace in the
log (shown with ``--verbose``), and SIGTERM or SIGINT stopping it at once, its wait for a retry too.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from signal import Signals
from typing import Protocol

from pipelines.clients import AdmClientResource
from pipelines.failures import attempt_run_id, headline, is_transient, retry_note, retry_wait_s
from pipelines.settings import NO_SERVICE, SettingsError, SyncSettings, configured_tenant
from pipelines.stopping import pause
from pipelines.sync import SyncOutcome, SyncRequest, SyncServices, sync_tenant
from pipelines.warehouse_resource import WarehouseResource
from warehouse.read_modes import FULL, INCREMENTAL
from warehouse.runs import RunRecord

logger = logging.getLogger(__name__)

NIGHTLY_JOB = "nightly_sync"
FULL_REFRESH_JOB = "full_refresh"


def dagster_home_problem() -> str | None:
    """Why ``DAGSTER_HOME`` cannot keep this process's runs (Dagster takes only an absolute path to an
    existing folder, and otherwise fails with a page of traceback), or None."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return None
    if not Path(home).is_absolute():
        return f"DAGSTER_HOME must be an absolute path (Dagster's rule), not {home!r}"
    if not Path(home).is_dir():
        return f"DAGSTER_HOME {home!r} is not an existing folder (Dagster keeps the runs' history there)"
    return None


def job_name(full_refresh: bool) -> str:
    """The job of a tenant sync: the incremental one, or the full refresh."""
    return FULL_REFRESH_JOB if full_refresh else NIGHTLY_JOB


@dataclass(frozen=True)
class TenantRun:
    """The outcome of one tenant's run."""

    tenant_id: str
    run_id: str
    success: bool
    error: str | None
    tries: int = 1
    """How many times the sync ran (1 plus its retries), each try with a ``sync_runs`` row of its own."""

    @property
    def row_ids(self) -> list[str]:
        """The ``sync_runs`` ids of the run's tries, the first first."""
        return [attempt_run_id(self.run_id, retry) for retry in range(self.tries)]


class RunTenant(Protocol):
    """Runs one tenant's sync; a failure is reported in the `TenantRun`, not raised."""

    def __call__(
        self, tenant_id: str, *, full_refresh: bool = False, allow_over_quota: bool = False
    ) -> TenantRun: ...


@contextmanager
def tenant_runner(
    settings: SyncSettings,
    adm: AdmClientResource | None = None,
    warehouse: WarehouseResource | None = None,
    *,
    verbose: bool = False,
) -> Iterator[RunTenant]:
    """What runs the tenant syncs of this process with the ``settings`` (``adm`` and ``warehouse`` replace
    their resources): the Dagster job on the instance of ``DAGSTER_HOME`` when one is set, with Dagster's
    log at INFO with ``verbose``; else the sync itself."""
    if os.environ.get("DAGSTER_HOME"):
        from pipelines.runner import dagster_runner  # Dagster is loaded only where it records the run

        with dagster_runner(settings, adm, warehouse, verbose=verbose) as run:
            yield run
        return
    services = SyncServices(
        adm or AdmClientResource(settings), warehouse or WarehouseResource(settings), settings
    )
    yield partial(run_directly, services)


def run_directly(
    services: SyncServices, tenant_id: str, *, full_refresh: bool = False, allow_over_quota: bool = False
) -> TenantRun:
    """Run one tenant's sync as the job's step does, retrying a passing failure as the step is retried."""
    run_id = str(uuid.uuid4())
    refused = _refusal(services, tenant_id)
    if refused is not None:
        return TenantRun(tenant_id, run_id, success=False, error=refused)
    logger.info("tenant %s: %s sync", tenant_id, FULL if full_refresh else INCREMENTAL)
    policy, retry = services.policy, 0
    while True:
        request = SyncRequest(
            tenant_id,
            attempt_run_id(run_id, retry),
            full_refresh=full_refresh,
            allow_over_quota=allow_over_quota,
            job_name=job_name(full_refresh),
        )
        failed = _try(request, services)
        if failed is None:
            return TenantRun(tenant_id, run_id, success=True, error=None, tries=retry + 1)
        error, line = failed
        wait = retry_wait_s(retry, policy.max_retries, policy.retry_wait_s) if is_transient(error) else None
        if wait is None:
            logger.warning("tenant %s: run %s failed: %s", tenant_id, request.run_id, line, exc_info=error)
            return TenantRun(tenant_id, run_id, success=False, error=line, tries=retry + 1)
        logger.warning(retry_note(error, wait))
        stopped_by = pause(wait)
        if stopped_by is not None:
            said = f"{line}; {Signals(stopped_by).name} before its retry: stopped, nothing further sent"
            return TenantRun(tenant_id, run_id, success=False, error=said, tries=retry + 1)
        retry += 1


def _try(request: SyncRequest, services: SyncServices) -> tuple[Exception, str] | None:
    """One try of the sync: None when it committed (its warnings logged), else its failure and one line."""
    outcome = SyncOutcome(RunRecord(request.run_id, request.tenant_id, request.mode, datetime.now(UTC)))
    try:
        sync_tenant(request, services, outcome)
    except Exception as error:
        return error, headline(error, outcome.record.error)
    for warning in outcome.record.warnings:
        logger.warning(warning)
    return None


def _refusal(services: SyncServices, tenant_id: str) -> str | None:
    """Why the run would do nothing at all (as the job's step refuses it), or None."""
    if not services.adm.settings.address_configured:  # the client the sync will use
        return NO_SERVICE
    try:
        configured_tenant(tenant_id, services.policy.sync_tenants)
    except SettingsError as error:
        return f"{error}; this run did nothing"
    return None
