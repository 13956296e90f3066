"""``authority-sync budget``: a tenant's month projected from its sizes in the warehouse, checked against what
the runs then cost on the small emulator (loopback HTTP, a real DuckDB file)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from emulator.server import EmulatorServer
from pipelines.cli import app
from pipelines.settings import NO_TENANT
from tests.conftest import DEMO_TENANT_ID, fresh, shared_http
from tests.sync_support import settings_for, sync_direct


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh."""
    yield from fresh(small_emulator_server)


def test_the_projection_is_what_the_next_runs_cost_and_a_month_past_the_share_warns(
    server: EmulatorServer, synced: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(server, synced)  # after its first run
    shared_http().post(f"{server.base_url}/_admin/mutate", json={"decisionsUpdated": 3}).raise_for_status()
    night = sync_direct(settings, DEMO_TENANT_ID, full_refresh=False).record
    changed = sum(night.api_calls.get(e, 0) for e in ("E11", "E12")) - (night.revisions_rechecked or 0)
    monkeypatch.setenv("ADM_TENANTS", DEMO_TENANT_ID)
    monkeypatch.setenv("ADM_WAREHOUSE", str(settings.warehouse))

    shown = CliRunner().invoke(app, ["budget"], env={"COLUMNS": "200"})

    assert shown.exit_code == 0, shown.output
    found = re.search(r"a full refresh ~([\d,]+) API calls, a nightly run ~([\d,]+)", shown.output)
    assert found is not None, shown.output
    full, nightly = (int(value.replace(",", "")) for value in found.groups())
    # The next runs, with the service unchanged: at most what was projected, which also counts the revision
    # lists of the records a night changes (as many as the last night's).
    after = [sync_direct(settings, DEMO_TENANT_ID, full_refresh=mode).record for mode in (True, False)]
    assert [record.status.value for record in after] == ["succeeded", "succeeded"]
    assert after[0].api_calls_total <= full <= after[0].api_calls_total + changed
    assert after[1].api_calls_total <= nightly <= after[1].api_calls_total + changed
    assert re.search(r"essential \(set\) +│ +[\d,]+ │ +\d+% of 25,000", shown.output), shown.output
    assert "premium" in shown.output and "enterprise" in shown.output
    assert "warning" not in shown.output

    monkeypatch.setenv("ADM_MONTHLY_QUOTA", "100")
    tight = CliRunner().invoke(app, ["budget"], env={"COLUMNS": "200"})

    assert tight.exit_code == 0, tight.output
    assert "would pass 90% of the essential quota (100)" in tight.output


def test_with_no_tenant_configured_it_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADM_TENANTS", raising=False)
    monkeypatch.delenv("ADM_TENANT_ID", raising=False)

    shown = CliRunner().invoke(app, ["budget"])

    assert shown.exit_code == 2
    assert shown.output.strip() == f"error: {NO_TENANT}"
