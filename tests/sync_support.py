"""Helpers of the tenant-sync tests: settings pointed at a test emulator, and runs of the real jobs."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb

from emulator.server import EmulatorServer
from pipelines.bindings import resources
from pipelines.clients import AdmClientResource
from pipelines.demo import demo_settings
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings, tenant_variable_suffix
from pipelines.sync import SyncOutcome, SyncRequest, SyncServices, sync_tenant
from pipelines.tenant_runs import TenantRun
from resources.ratelimit import clear_buckets
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN, OTHER_TENANT_ID, OTHER_TOKEN
from tests.standin import StandIn
from warehouse.merge import DIGESTED
from warehouse.reads import read_only
from warehouse.runs import RunRecord
from warehouse.schema import row_digest

ROOT = Path(__file__).resolve().parent.parent
DAGSTER = Path(sys.executable).with_name("dagster")
"""The venv's ``dagster`` command."""


def dagster_cli(
    *arguments: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run ``dagster <arguments>`` from the repository root; the result, whatever its exit code."""
    return subprocess.run(
        [str(DAGSTER), *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def settings_for(server: EmulatorServer, warehouse: Path, **changes: Any) -> SyncSettings:
    """Both emulator tenants, the demo tenant's token, the given warehouse; ``changes`` on top."""
    # No step retries unless a test asks: a test of a failure wants the failure, not 90 s of retries.
    base = SyncSettings(tenants=[DEMO_TENANT_ID, OTHER_TENANT_ID], warehouse=warehouse, max_retries=0)
    return demo_settings(base, server.base_url).model_copy(update=changes)


def adm_for(server: EmulatorServer, **changes: Any) -> AdmClientResource:
    """The client resource of the demo tenant on ``server``, its rate-limit state in a folder of its own
    (a client of another test must not inherit this one's drained bucket)."""
    return AdmClientResource(settings_for(server, Path(tempfile.mkdtemp()) / "unused.duckdb", **changes))


def sync(
    settings: SyncSettings,
    tenant_id: str = DEMO_TENANT_ID,
    *,
    full_refresh: bool = False,
    expect_success: bool = True,
) -> TenantRun:
    """One run of the tenant sync, free of Dagster (a job run costs about 2.8 s more), for the tests of what
    a sync does; what Dagster adds is tested through `sync_job` (tests/test_pipeline_dagster*.py). A failure
    raises unless ``expect_success`` is False; the run's ``error`` is then its ``sync_runs.error``."""
    request = SyncRequest(tenant_id, f"run-{uuid.uuid4()}", full_refresh=full_refresh)
    outcome = SyncOutcome(RunRecord(request.run_id, tenant_id, request.mode, datetime.now(UTC)))
    try:
        run_request(settings, request, outcome)
    except Exception:
        if expect_success:
            raise
        return TenantRun(tenant_id, request.run_id, success=False, error=outcome.record.error)
    return TenantRun(tenant_id, request.run_id, success=True, error=None)


def sync_job(
    settings: SyncSettings,
    tenant_id: str = DEMO_TENANT_ID,
    *,
    full_refresh: bool = False,
    instance: dg.DagsterInstance | None = None,
    expect_success: bool = True,
) -> TenantRun:
    """One run of the tenant sync job on ``instance`` (default: a temporary one), for the tests of what
    Dagster adds: events, tags, retries, instances."""
    defs = sync_definitions(settings)
    if instance is None:
        with in_memory_instance() as temporary:
            run = run_tenant(defs, tenant_id, temporary, full_refresh=full_refresh)
    else:
        run = run_tenant(defs, tenant_id, instance, full_refresh=full_refresh)
    if expect_success:
        assert run.success, run.error
    return run


def in_memory_instance(settings: dict[str, Any] | None = None) -> dg.DagsterInstance:
    """A Dagster instance held in memory, for the tests that run jobs in this process and read what the runs
    recorded, but are not about what Dagster keeps on disk: on a SQLite instance (``dg.instance_for_test``)
    the 181 events of a tenant sync's run (45 assets, 27 checks) cost about 2.5 s more (4.0-4.9 s a nightly
    run against 1.6-2.4 s, the sync itself about 1 s). Tests of what persists (``DAGSTER_HOME``, the CLI's
    history, sensor ticks, re-execution, other processes) keep a SQLite instance. ``settings``: instance
    settings as a ``dagster.yaml`` holds them (``python_logs``, ...)."""
    return dg.DagsterInstance.ephemeral(settings=settings)


def query(warehouse: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Query the committed warehouse (read-only, on a warm instance: a new one per query cost the suite
    about 30 ms of CPU each, 35 s in all)."""
    with read_only(warehouse) as con:
        assert con is not None, f"no warehouse at {warehouse}"
        return con.execute(sql, params or []).fetchall()


def stale_digests(con: duckdb.DuckDBPyConnection, tenant_id: str | None = None) -> dict[str, int]:
    """Rows (of ``tenant_id``, or of every tenant) whose stored ``row_digest`` is not the digest of their
    staged columns, by table. The merge takes a row whose digest equals the staged row's as unchanged, so a
    stale digest would keep a changed row from being written, or write an unchanged one again."""
    stale = {}
    for table in sorted(DIGESTED):
        sql = f"SELECT count(*) FROM {table} WHERE row_digest IS DISTINCT FROM {row_digest(table)} "  # noqa: S608
        found = con.execute(sql + "AND tenant_id = coalesce(?, tenant_id)", [tenant_id]).fetchone()
        if found and found[0]:
            stale[table] = int(found[0])
    return stale


def only_run(warehouse: Path) -> tuple[str, datetime]:
    """The id and commit instant (in UTC) of the one run a warehouse has had: a copy of the synced template
    (tests/conftest.py) names its first run this way."""
    ((run_id, finished_at),) = query(warehouse, "SELECT run_id, finished_at FROM sync_runs")
    return str(run_id), finished_at.astimezone(UTC)


def sync_env(server: EmulatorServer, warehouse: Path, **changes: str) -> dict[str, str]:
    """``ADM_*`` variables of a sync of both emulator tenants into ``warehouse``, each tenant with its own
    token (``ADM_TOKEN__<TENANT>``); ``changes`` (``ADM_*`` names) on top. For processes that read the
    environment: ``dagster job execute``, ``dagster dev``, the CLI."""
    return {
        "ADM_BASE_URL": server.base_url,
        "ADM_TENANTS": f"{DEMO_TENANT_ID},{OTHER_TENANT_ID}",
        f"ADM_TOKEN__{tenant_variable_suffix(DEMO_TENANT_ID)}": DEMO_TOKEN,
        f"ADM_TOKEN__{tenant_variable_suffix(OTHER_TENANT_ID)}": OTHER_TOKEN,
        "ADM_RATE_PER_MINUTE": "60000",
        "ADM_MAX_RETRIES": "0",
        "ADM_WAREHOUSE": str(warehouse),
        **changes,
    }


STANDIN_TENANT_ID = "5a1c0de5-0000-4000-8000-00000000c0de"
STANDIN_TOKEN = "stand-in-token"


def sync_standin(
    standin: StandIn, warehouse: Path, *, full_refresh: bool = True, **changes: Any
) -> SyncOutcome:
    """One run of the tenant sync (free of Dagster) against a stand-in of the service; ``changes`` are
    settings (the rate is unlimited unless they say otherwise). Raises what the run raises; the outcome
    holds its ``sync_runs`` row."""
    values: dict[str, Any] = {"rate_per_minute": 60_000} | changes
    config = SyncSettings(
        base_url=standin.base_url,
        token=STANDIN_TOKEN,
        tenants=[STANDIN_TENANT_ID],
        warehouse=warehouse,
        **values,
    )
    return sync_direct(config, STANDIN_TENANT_ID, full_refresh=full_refresh)


def sync_direct(settings: SyncSettings, tenant_id: str, *, full_refresh: bool) -> SyncOutcome:
    """One run of the tenant sync under ``settings``, free of Dagster; raises what the run raises."""
    return run_request(settings, SyncRequest(tenant_id, f"run-{uuid.uuid4()}", full_refresh=full_refresh))


def run_request(
    settings: SyncSettings, request: SyncRequest, outcome: SyncOutcome | None = None
) -> SyncOutcome:
    """``request`` run under ``settings`` (``outcome`` as `sync_tenant` takes it), from a full rate-limit
    bucket: the buckets are the process's, and a previous test's must not slow this one."""
    clear_buckets()
    bound = resources(settings)
    return sync_tenant(request, SyncServices(bound["adm"], bound["warehouse"], bound["sync_policy"]), outcome)
