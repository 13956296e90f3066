"""The Dagster code location loads; with no service configured nothing syncs demo data into the warehouse
(the demo has files of its own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.snap.snap_to_yaml import default_values_from_type_snap
from typer.testing import CliRunner

from emulator.scale import DEMO_TENANT_ID
from pipelines.bindings import resources as bound_resources
from pipelines.cli import app
from pipelines.definitions import defs
from pipelines.freshness import FRESHNESS_KEY, check_names
from pipelines.jobs import STEP_EXECUTOR
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings, load_settings
from tests.sync_support import dagster_cli, in_memory_instance
from warehouse.catalog import CURRENT_USER_POSITIONS, LISTS, REVISIONS

STAGED_TABLES = [
    *(table for entry in LISTS.values() for table in entry.family.tables),
    *CURRENT_USER_POSITIONS.family.tables,
    *REVISIONS,
]


def test_definitions_hold_every_job_schedule_and_check() -> None:
    repository = defs.get_repository_def()
    assert {"nightly_sync", "full_refresh"} <= set(repository.job_names)
    assert {schedule.name for schedule in repository.schedule_defs} == {
        "nightly_sync_schedule",
        "weekly_full_refresh_schedule",
        "hr_apply_due",
        "hr_dated_changes_check_schedule",
    }
    assert {sensor.name for sensor in repository.sensor_defs} == {
        "tenant_freshness_sensor",
        "hr_drop_folder",
        "hr_refresh_after_apply",
    }
    graph = repository.asset_graph
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    # Every table the sync stages, plus the run log, under the adm/ prefix; then what derives from them.
    tables = {f"adm/{table}" for table in [*STAGED_TABLES, "sync_runs"]}
    assert tables <= keys
    derived = keys - tables
    assert {
        "adm/users_history",
        "adm/decisions_history",
        "adm/v_user_authorities",
        "adm/v_sync_status",
    } <= derived
    assert {"adm/analytics_copy", "adm/tenant_freshness"} <= derived
    assert all(
        key.endswith("_history") or key.startswith("adm/v_")
        for key in derived - {"adm/analytics_copy", "adm/tenant_freshness"}
    )


def test_every_job_steps_through_the_fork_server_the_uis_materialize_too() -> None:
    """One executor for the whole code location: the sync jobs, the HR and freshness jobs and the implicit
    asset job that the UI's Materialize and `dagster asset materialize` launch (which had Dagster's default,
    a new interpreter per step, whose teardown delays a stop by seconds)."""
    repository = defs.get_repository_def()
    jobs = {name: repository.get_job(name) for name in repository.job_names}
    assert any(name.startswith("__ASSET_JOB") for name in jobs)
    assert {name: job.executor_def.name for name, job in jobs.items()} == dict.fromkeys(
        jobs, STEP_EXECUTOR.name
    )


def test_every_check_of_the_sync_keeps_a_result_per_tenant() -> None:
    # Partitioned like the sync: one tenant's pass never hides another's failure in the UI.
    graph = defs.get_repository_def().asset_graph
    sync = graph.get(dg.AssetKey.from_user_string("adm/users")).partitions_def
    assert sync is not None
    checks = [key for key in graph.asset_check_keys if key.asset_key.path[0] == "adm"]
    assert len(checks) > 10
    unpartitioned = [key.to_user_string() for key in checks if graph.get(key).partitions_def != sync]
    # The freshness checks are one per tenant by name; the HR check judges every tenant's dated changes.
    hr = "adm/users:hr_dated_changes_on_time"
    assert hr in unpartitioned
    assert all(key.startswith("adm/tenant_freshness:fresh_") for key in set(unpartitioned) - {hr})


def test_freshness_has_one_truth_the_checks_of_each_tenant() -> None:
    # Before: every table carried a freshness policy, which any tenant's commit satisfied: the UI showed
    # Passing beside the failed fresh_<tenant> check of a stale tenant.
    graph = defs.get_repository_def().asset_graph
    keys = graph.get_all_asset_keys()
    assert [key for key in keys if graph.get(key).freshness_policy_or_from_metadata is not None] == []
    fresh = {key.name for key in graph.asset_check_keys if key.name.startswith("fresh_")}
    settings = load_settings()
    assert fresh == set(check_names(settings.sync_tenants, settings.tenant_names))
    # Their asset is one nothing materializes. Before, on adm/sync_runs: the UI shows a check's result
    # for its asset's latest materialization, so any tenant's sync turned every tenant's freshness check
    # back to "Not evaluated" (a stale tenant's failure hidden until the sensor's next run).
    assert {key.asset_key for key in graph.asset_check_keys if key.name in fresh} == {FRESHNESS_KEY}
    assert not graph.get(FRESHNESS_KEY).is_materializable
    assert graph.get(FRESHNESS_KEY).parent_keys == {dg.AssetKey(["adm", "sync_runs"])}


def test_the_asset_graph_shows_lineage_from_tables_to_what_analysts_open() -> None:
    graph = defs.get_repository_def().asset_graph

    def upstream(key: str) -> set[str]:
        return {
            parent.to_user_string() for parent in graph.get(dg.AssetKey.from_user_string(key)).parent_keys
        }

    assert upstream("adm/users_history") == {"adm/users"}
    assert {"adm/users_history", "adm/delegations_history", "adm/decisions_history"} <= upstream(
        "adm/v_user_authorities"
    )
    assert upstream("adm/v_sync_status") == {"adm/sync_runs"}  # and the tenants' labels, not an asset
    assert {"adm/users", "adm/users_history", "adm/v_user_authorities"} <= upstream("adm/analytics_copy")


def test_dagster_validates_the_workspace() -> None:
    result = dagster_cli("definitions", "validate", "-w", "workspace.yaml", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.fixture
def no_service_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ADM_* address or credential, as a cron job whose environment file failed to load."""
    for name in (
        "ADM_BASE_URL",
        "ADM_ENVIRONMENT",
        "ADM_TOKEN",
        "ADM_ACCESS_KEY",
        "ADM_TENANTS",
        "ADM_TENANT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_service_configured")
def test_an_empty_environment_refuses_to_sync_in_one_line(tmp_path: Path) -> None:
    # Before: the sync started the embedded emulator and wrote 300 demo users into data/warehouse.duckdb.
    warehouse = tmp_path / "wh.duckdb"
    result = CliRunner().invoke(app, ["extract", "--warehouse", str(warehouse)])

    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: no service address is configured: set ADM_BASE_URL or ADM_ENVIRONMENT")
    assert "authority-sync demo" in line
    assert not warehouse.exists()


@pytest.mark.usefixtures("no_service_configured")
def test_a_dagster_sync_with_no_service_refuses_in_one_line(tmp_path: Path) -> None:
    settings = SyncSettings(warehouse=tmp_path / "wh.duckdb", tenant_id=DEMO_TENANT_ID)
    with in_memory_instance() as instance:
        run = run_tenant(sync_definitions(settings), DEMO_TENANT_ID, instance)

    assert not run.success and run.error is not None
    assert run.error.startswith("no service address is configured: set ADM_BASE_URL or ADM_ENVIRONMENT")
    assert not (tmp_path / "wh.duckdb").exists()


def test_the_client_imports_without_dagster() -> None:
    # Before: importing the client loaded Dagster (590 of its 859 ms).
    loaded = "sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'emulator'})"
    probe = f"import sys, resources.client; print({loaded})"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_no_job_has_resource_config_the_launchpad_could_copy(tmp_path: Path) -> None:
    # Before: the launchpad pre-filled every resource's values (a copy that went stale when the operator
    # changed a setting) and a guard (pipelines/launch.py) refused runs whose copy differed.
    settings = SyncSettings(
        base_url="http://127.0.0.1:9", tenants=[DEMO_TENANT_ID], token="t", warehouse=tmp_path / "w.duckdb"
    )
    job = sync_definitions(settings).resolve_job_def("full_refresh")
    schema = job.get_job_snapshot().config_schema_snapshot
    root = job.get_job_snapshot().mode_def_snaps[0].root_config_key
    assert root is not None
    # What the launchpad's root default YAML is made of (dagster_graphql's rootDefaultYaml).
    prefilled = default_values_from_type_snap(schema.get_config_snap(root), schema)
    assert not any(section.get("config") for section in (prefilled.get("resources") or {}).values())
    # Each resource is the settings or a view of them, not a configurable resource a run could set.
    bound = bound_resources(settings)
    assert not any(isinstance(resource, dg.ConfigurableResource) for resource in bound.values())
    assert all(getattr(resource, "settings", resource) is settings for resource in bound.values())
    # A run config copied before the quota was lowered is refused before anything is read or written.
    stale = {"resources": {"sync_policy": {"config": {"monthly_quota": 100_000}}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match='unexpected config entry "monthly_quota"'):
        job.execute_in_process(run_config=stale, partition_key=DEMO_TENANT_ID)
    assert not settings.warehouse.exists()


def test_table_assets_carry_the_dictionarys_descriptions_and_the_warehouses_column_types() -> None:
    # Before: a second, shorter description per table, and a column schema of staging types, undescribed.
    specs = {spec.key.to_user_string(): spec for spec in defs.resolve_all_asset_specs()}
    users = specs["adm/users"]
    assert (users.description or "").startswith("The users of the tenant as they are now")
    schema = users.metadata["dagster/column_schema"]
    columns = {column.name: column for column in schema.columns}
    assert columns["is_deleted"].type == "BOOLEAN"  # a warehouse column staging does not have
    assert columns["synced_at"].type == "TIMESTAMPTZ"
    assert all(column.description for column in schema.columns)
