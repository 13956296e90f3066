"""A tenant id names folders and lock files: only a configured tenant reaches them, on every launch path
(issue 18). Before: the run tag ``dagster/partition: "*"`` deleted every tenant's in-flight staging,
``".."`` emptied the staging folder, and ``extract --tenant ../../etc`` gave an 80-line traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from emulator.server import EmulatorServer
from pipelines.cli import app
from pipelines.location import sync_definitions
from pipelines.runner import first_error
from pipelines.tenant_runs import NIGHTLY_JOB
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, fresh
from tests.sync_support import in_memory_instance, settings_for, sync_env
from warehouse.staging import clean_leftovers


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh: these tests are about which tenant a run may name, not volume
    (a full extract of the default-scale tenant took 30 s)."""
    yield from fresh(small_emulator_server)


@pytest.mark.parametrize("tenant", ["../../etc", "*", "..", "not-a-tenant"])
def test_the_cli_refuses_a_tenant_that_is_not_configured_in_one_line(
    server: EmulatorServer, tmp_path: Path, tenant: str
) -> None:
    env = sync_env(server, tmp_path / "wh.duckdb")
    result = CliRunner().invoke(app, ["extract", "--tenant", tenant], env=env)

    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: --tenant: tenant {tenant!r} is not configured (ADM_TENANTS: ")
    assert not (tmp_path / "wh.duckdb").exists()


def test_a_configured_tenant_may_be_named_in_any_case(server: EmulatorServer, migrated: Path) -> None:
    env = sync_env(server, migrated)
    result = CliRunner().invoke(app, ["extract", "--tenant", DEMO_TENANT_ID.upper()], env=env)
    assert result.exit_code == 0, result.output


def test_a_tenant_named_in_adm_tenants_is_known_by_its_name(server: EmulatorServer, migrated: Path) -> None:
    # Before: tenants appeared only as UUIDs, and the warehouse's labels had to be set by hand.
    warehouse = migrated  # a copy of the migrated template: creating a warehouse is not the subject
    env = sync_env(server, warehouse, ADM_TENANTS=f"Acme Corp={DEMO_TENANT_ID},{OTHER_TENANT_ID}")
    result = CliRunner().invoke(app, ["extract", "--tenant", "acme corp"], env=env)

    assert result.exit_code == 0, result.output
    assert f"tenant Acme Corp ({DEMO_TENANT_ID}) | full run" in " ".join(result.output.split())
    with duckdb.connect(str(warehouse), read_only=True) as con:
        labels = con.execute("SELECT tenant_id, tenant_label FROM v_sync_status").fetchall()
    assert labels == [(DEMO_TENANT_ID, "Acme Corp")]


@pytest.mark.parametrize("partition", ["*", ".."])
def test_a_partition_tag_naming_no_tenant_fails_the_run_and_touches_no_staging(
    server: EmulatorServer, tmp_path: Path, partition: str
) -> None:
    settings = settings_for(server, tmp_path / "wh.duckdb")
    in_flight = settings.staging_root / "another-run" / OTHER_TENANT_ID
    in_flight.mkdir(parents=True)
    job = sync_definitions(settings).resolve_job_def(NIGHTLY_JOB)

    with in_memory_instance() as instance:
        result = job.execute_in_process(
            instance=instance, tags={"dagster/partition": partition}, raise_on_error=False
        )

    assert not result.success
    assert f"run partition: tenant {partition!r} is not configured" in first_error(result)
    assert in_flight.is_dir()


@pytest.mark.parametrize("tenant", ["*", "..", "a/b", DEMO_TENANT_ID + "/.."])
def test_staging_cleanup_refuses_what_is_not_a_tenant_id(tmp_path: Path, tenant: str) -> None:
    kept = tmp_path / "run" / DEMO_TENANT_ID
    kept.mkdir(parents=True)
    with pytest.raises(ValueError, match="not a tenant id"):
        clean_leftovers(tmp_path, tenant)
    assert kept.is_dir()
