"""Helpers of the tests of the tenant sync under Dagster's launch paths (tests/test_pipeline_dagster*.py):
the events a run recorded, the service changed behind the sync's back, and the job a re-execution
reconstructs in its own step process (which imports this module)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from emulator.faults import FaultConfig
from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from pipelines.definitions import code_location
from pipelines.instance_settings import instance_home
from pipelines.location import sync_definitions
from pipelines.settings import SyncSettings, load_settings
from pipelines.tenant_runs import NIGHTLY_JOB
from tests.conftest import set_faults, shared_http
from tests.sync_support import query, sync, sync_env

PARTITION = {"dagster/partition": DEMO_TENANT_ID}
RATE = {"ADM_RATE_PER_MINUTE": "3000", "ADM_BURST": "10"}
"""The client set to the plan the emulator enforces below (50 requests/s, a burst of 10)."""
PLAN = FaultConfig(rate_limit_per_minute=3000, rate_burst=10)


def nightly_sync_job() -> dg.JobDefinition:
    """The nightly job as the code location builds it from the environment (for `dg.reconstructable`)."""
    return sync_definitions(load_settings()).resolve_job_def(NIGHTLY_JOB)


@dg.definitions
def location_from_environment() -> dg.Definitions:
    """The code location as ``pipelines.definitions`` builds it, from the environment when it is loaded (a
    test's), for an in-process code location (``pipelines.definitions`` reads it once, when imported)."""
    return code_location(load_settings())


def events(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list[dg.DagsterEvent]:
    """The run's events of one kind."""
    records = instance.get_records_for_run(run_id, of_type=kind).records
    return [
        record.event_log_entry.dagster_event for record in records if record.event_log_entry.dagster_event
    ]


def materialized(instance: dg.DagsterInstance, run_id: str) -> dict[str, dict[str, Any]]:
    """Asset key -> metadata values of each materialization of the run."""
    found = {}
    for event in events(instance, run_id, dg.DagsterEventType.ASSET_MATERIALIZATION):
        materialization = event.step_materialization_data.materialization
        metadata = {name: value.value for name, value in materialization.metadata.items()}
        found[materialization.asset_key.to_user_string()] = metadata | {
            "partition": materialization.partition
        }
    return found


def tenant_rows(warehouse: Path, table: str, tenant: str = DEMO_TENANT_ID) -> int:
    """Rows of one table for one tenant."""
    (count,) = query(warehouse, f"SELECT count(*) FROM {table} WHERE tenant_id = ?", [tenant])[0]  # noqa: S608
    return int(count)


def mutate(server: EmulatorServer, **changes: int) -> dict[str, list[str]]:
    """Change the service behind the sync's back."""
    response = shared_http().post(f"{server.base_url}/_admin/mutate", json=changes)
    response.raise_for_status()
    result: dict[str, list[str]] = response.json()
    return result


def too_many_requests(server: EmulatorServer) -> int:
    """429 answers the emulator gave since its counters were reset."""
    return int(shared_http().get(f"{server.base_url}/_admin/stats").json()["faults"].get("429", 0))


def new_dagster_home(tmp_path: Path) -> Path:
    """A Dagster instance folder with the project's instance settings (run concurrency per tenant)."""
    return instance_home(tmp_path / "dagster_home")


def synced_then_deleted_at_the_plan(
    server: EmulatorServer, settings: SyncSettings, dagster_home: Path
) -> tuple[set[str], dict[str, str]]:
    """A first sync, then two decisions deleted at the service, which now enforces the client's plan; the
    deleted ids and the environment of a Dagster process on ``dagster_home``."""
    sync(settings)
    deleted = set(mutate(server, decisionsDeleted=2)["decisionsDeleted"])
    set_faults(server, PLAN)
    server.emulator.reset_stats()
    env = os.environ | sync_env(server, settings.warehouse, **RATE) | {"DAGSTER_HOME": str(dagster_home)}
    return deleted, env
