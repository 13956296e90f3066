"""Credentials never reach Dagster's event log, the warehouse, staging or the CLI's output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from emulator.scale import DEMO_TENANT_ID, Scale
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from pipelines.cli import app
from pipelines.settings import SyncSettings
from tests.sync_support import sync_job

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


def test_no_secret_in_events_warehouse_or_staging(
    secret_server: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADM_ACCESS_KEY", ACCESS_KEY)
    settings = SyncSettings(
        base_url=secret_server.base_url,
        access_key=SecretStr(ACCESS_KEY),
        tenants=[DEMO_TENANT_ID],
        warehouse=tmp_path / "wh.duckdb",
    )
    instance = dg.DagsterInstance.ephemeral()

    run = sync_job(settings, instance=instance)

    secrets = {ACCESS_KEY, TOKEN} | exchanged_tokens(secret_server)
    assert len(secrets) > 2, "the run must have exchanged the access key for a token"
    events = "\n".join(str(entry) for entry in instance.all_logs(run.run_id))
    assert "adm/sync_runs" in events or "adm', 'sync_runs" in events
    assert not [secret for secret in secrets if secret in events]
    assert not [secret for secret in secrets if secret in _warehouse_text(settings.warehouse)]
    leftovers = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".duckdb"]
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
