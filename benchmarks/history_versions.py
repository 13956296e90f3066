"""History versions a fixed mutation script adds: how many versions each history table gains, next to the
changes the script really made to those records. Two warehouses follow the same service: one kept by
nightly (incremental) runs, one by full refreshes.

The script, through the service's own write endpoints between two runs: rename 3 groups that have members
(E3), rename 2 managers (E1 name), give 5 users a new manager (E1 managerId), change 4 users' display names
(E1). Real changes: 3 groups, 2 + 5 + 4 = 11 users (fewer when the picks overlap: printed).

Run: ``python -m benchmarks.history_versions`` (seconds: 300 users, 20 groups).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import dagster as dg
import duckdb
from pydantic import SecretStr
from rich.console import Console
from rich.table import Table

from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN, Scale
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from emulator.state import TenantState
from models.groups import UpdateGroup
from models.users import UpdateUserEntities
from pipelines.demo import demo_settings
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings
from resources.client import AdmClient
from resources.settings import ClientSettings

SCALE = Scale(users=300, decisions=300, delegations=100, documents=30, groups=20)
TABLES = ("users_history", "groups_history", "decisions_history", "delegations_history")


def versions(warehouse: Path) -> dict[str, int]:
    """Rows of each history table."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {table: _count(con, table) for table in TABLES}


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    found = con.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 - fixed names
    return int(found[0]) if found else 0


def sync(settings: SyncSettings, full_refresh: bool) -> None:
    """One run of the demo tenant; it must succeed."""
    with dg.DagsterInstance.ephemeral() as instance:
        run = run_tenant(sync_definitions(settings), DEMO_TENANT_ID, instance, full_refresh=full_refresh)
    if not run.success:
        raise SystemExit(f"the sync failed: {run.error}")


def mutate(client: AdmClient, state: TenantState, rng: random.Random) -> dict[str, set[str]]:
    """Apply the script; returns the ids of the records it changed, by history table."""
    member_groups = sorted({item["groupId"] for user in state.users.values() for item in user["userGroups"]})
    managers = sorted({boss for user, boss in state.manager_of.items() if boss != user})
    users = sorted(state.users)
    groups = rng.sample(member_groups, 3)
    renamed = rng.sample(managers, 2)
    moved = rng.sample([user for user in users if user not in renamed], 5)
    relabelled = rng.sample([user for user in users if user not in renamed + moved], 4)
    for number, group_id in enumerate(groups):
        client.update_group(group_id, UpdateGroup(group_name=f"Renamed group {number}"))
    for number, user_id in enumerate(renamed):
        client.update_user_entities(
            user_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, name=f"Boss {number}")
        )
    for user_id in moved:
        boss = rng.choice([other for other in users if other not in (user_id, state.manager_of[user_id])])
        client.update_user_entities(user_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, manager_id=boss))
    for number, user_id in enumerate(relabelled):
        client.update_user_entities(
            user_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, display_name=f"Relabelled {number}")
        )
    return {"groups_history": set(groups), "users_history": {*renamed, *moved, *relabelled}}


def main() -> None:
    """Sync, mutate, sync again; print the versions each warehouse gained."""
    console = Console()
    with EmulatorServer(EmulatorOptions(scale=SCALE)) as server, tempfile.TemporaryDirectory() as folder:
        base = SyncSettings(tenants=[DEMO_TENANT_ID], warehouse=Path(folder) / "unused.duckdb")
        settings = demo_settings(base, server.base_url)
        nightly = settings.model_copy(update={"warehouse": Path(folder) / "nightly.duckdb"})
        full = settings.model_copy(update={"warehouse": Path(folder) / "full.duckdb"})
        for target in (nightly, full):
            sync(target, full_refresh=True)
        before = {"nightly": versions(nightly.warehouse), "full": versions(full.warehouse)}
        state = server.emulator.tenants[DEMO_TENANT_ID]
        client_settings = ClientSettings(
            base_url=server.base_url,
            tenant_id=DEMO_TENANT_ID,
            token=SecretStr(DEMO_TOKEN),
            rate_per_minute=60_000,
        )
        with AdmClient(client_settings) as client:
            changed = mutate(client, state, random.Random(7))
        sync(nightly, full_refresh=False)
        sync(full, full_refresh=True)
        after = {"nightly": versions(nightly.warehouse), "full": versions(full.warehouse)}

    table = Table(title="History versions added by the mutation script")
    for column in ("table", "records really changed", "nightly runs", "full refreshes"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name in TABLES:
        table.add_row(
            name,
            str(len(changed.get(name, set()))),
            str(after["nightly"][name] - before["nightly"][name]),
            str(after["full"][name] - before["full"][name]),
        )
    console.print(table)


if __name__ == "__main__":
    main()
