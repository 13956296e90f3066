"""The Dagster code location loads, and the CLI runs the extract with its embedded emulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from emulator.scale import DEMO_ACCESS_KEY, DEMO_TOKEN
from pipelines.cli import app
from pipelines.definitions import defs
from pipelines.extract import LISTS, REVISION_LISTS
from tests.sync_support import dagster_cli

STAGED_TABLES = [
    *(table for spec in LISTS.values() for table in spec.tables),
    "current_user_positions",
    *REVISION_LISTS,
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
    keys = {key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()}
    # Every table the sync stages, plus the run log, under the adm/ prefix.
    assert keys == {f"adm/{table}" for table in [*STAGED_TABLES, "sync_runs"]}


def test_dagster_validates_the_workspace() -> None:
    result = dagster_cli("definitions", "validate", "-w", "workspace.yaml", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.fixture
def no_service_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ADM_* address or credential: the CLI must use its embedded emulator."""
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
def test_cli_extract_uses_the_embedded_emulator_and_prints_no_secret(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["extract", "--warehouse", str(tmp_path / "wh.duckdb")])

    assert result.exit_code == 0, result.output
    assert "embedded emulator" in result.output
    assert "decisions" in result.output and "API calls" in result.output
    assert DEMO_TOKEN not in result.output and DEMO_ACCESS_KEY not in result.output
