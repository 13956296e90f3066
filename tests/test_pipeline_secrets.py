"""Credentials never reach Dagster's event log, the warehouse, staging or the CLI's output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from typer.testing import CliRunner

from emulator.scale import DEMO_TENANT_ID, Scale
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from pipelines.bindings import client_resource
from pipelines.cli import app
from pipelines.runner import run_tenant
from resources.warehouse_resource import WarehouseResource

ACCESS_KEY = "sk-PIPELINE-SECRET-7781"
TOKEN = "tok-PIPELINE-SECRET-4419"


@pytest.fixture(scope="module")
def secret_server() -> Iterator[EmulatorServer]:
    """A small emulator whose demo tenant has distinctive credentials."""
    options = EmulatorOptions(
        scale=Scale(users=30, decisions=60, delegations=20, documents=10), token=TOKEN, access_key=ACCESS_KEY
    )
    with EmulatorServer(options) as server:
        yield server


def exchanged_tokens(server: EmulatorServer) -> set[str]:
    """Tokens the emulator issued for the access key."""
    return {token for token in server.emulator.tokens if token.startswith("emu.")}


def test_no_secret_in_events_warehouse_or_staging(secret_server: EmulatorServer, tmp_path: Path) -> None:
    warehouse = WarehouseResource(path=str(tmp_path / "wh.duckdb"), staging_root=str(tmp_path / "staging"))
    adm = client_resource(
        base_url=secret_server.base_url, access_key=ACCESS_KEY, token=None, tenant_id=DEMO_TENANT_ID
    )
    instance = dg.DagsterInstance.ephemeral()

    run = run_tenant(DEMO_TENANT_ID, adm, warehouse, instance=instance)

    assert run.success, run.error
    secrets = {ACCESS_KEY, TOKEN} | exchanged_tokens(secret_server)
    assert len(secrets) > 2, "the run must have exchanged the access key for a token"
    events = "\n".join(str(entry) for entry in instance.all_logs(run.run_id))
    assert "sync_runs" in events
    assert not [secret for secret in secrets if secret in events]
    assert not [secret for secret in secrets if secret in _warehouse_text(Path(warehouse.path))]
    leftovers = [p.read_bytes() for p in Path(warehouse.staging_root).rglob("*") if p.is_file()]
    assert not [s for s in secrets for blob in leftovers if s.encode() in blob]


def _warehouse_text(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        return "\n".join(str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)  # noqa: S608


def test_cli_prints_no_secret_even_when_the_run_fails(
    secret_server: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADM_BASE_URL", secret_server.base_url)
    monkeypatch.setenv("ADM_ACCESS_KEY", ACCESS_KEY + "-wrong")
    monkeypatch.setenv("ADM_TOKEN", TOKEN + "-wrong")
    monkeypatch.setenv("ADM_TENANT_ID", DEMO_TENANT_ID)
    monkeypatch.delenv("ADM_TENANTS", raising=False)

    result = CliRunner().invoke(app, ["extract", "--warehouse", str(tmp_path / "wh.duckdb")])

    assert result.exit_code == 1
    assert "failed" in result.output and "AuthenticationError" in result.output
    assert ACCESS_KEY not in result.output and TOKEN not in result.output
