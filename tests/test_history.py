"""History means something: a version is a change of the record itself, the same whether the runs read
incrementally or in full. Real syncs over loopback HTTP from the small emulator, changed through the
service's own write endpoints (E1, E3) between runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState
from models.groups import UpdateGroup
from models.users import UpdateUserEntities
from pipelines.settings import SyncSettings
from resources.client import AdmClient
from tests.conftest import DEMO_TENANT_ID, fresh
from tests.sync_support import query, settings_for, sync
from tests.test_client_support import make_client


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def state(emulator: Emulator) -> TenantState:
    """The demo tenant's records as the emulator holds them."""
    return emulator.tenants[DEMO_TENANT_ID]


@pytest.fixture
def client(server: EmulatorServer) -> Iterator[AdmClient]:
    """A client of the demo tenant, to change the service between runs."""
    with make_client(server) as adm:
        yield adm


@pytest.fixture
def incremental(server: EmulatorServer, tmp_path: Path) -> SyncSettings:
    """A warehouse kept by nightly (incremental) runs."""
    return settings_for(server, tmp_path / "incremental.duckdb")


@pytest.fixture
def full(server: EmulatorServer, tmp_path: Path) -> SyncSettings:
    """A warehouse kept by full refreshes."""
    return settings_for(server, tmp_path / "full.duckdb")


def both(incremental: SyncSettings, full: SyncSettings) -> None:
    """One run into each warehouse: a nightly run and a full refresh."""
    sync(incremental)
    sync(full, full_refresh=True)


def versions(settings: SyncSettings, table: str) -> dict[str, int]:
    """Versions per record of a history table."""
    found = query(settings.warehouse, f"SELECT id, count(*) FROM {table} GROUP BY id")  # noqa: S608
    return {str(record): int(count) for record, count in found}


def history(settings: SyncSettings, table: str) -> list[tuple[Any, ...]]:
    """A history table without the times and runs that recorded it: what changed, in order."""
    sql = (
        "SELECT id, content_hash, is_deleted, is_current, "  # noqa: S608 - test names
        f"row_number() OVER (PARTITION BY id ORDER BY valid_from) FROM {table} ORDER BY ALL"
    )
    return query(settings.warehouse, sql)


def added(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Records that gained versions, and how many."""
    return {key: count - before.get(key, 0) for key, count in after.items() if count != before.get(key, 0)}


def a_group_with_members(state: TenantState) -> str:
    """A group that at least one user belongs to."""
    return str(next(item["groupId"] for user in state.users.values() for item in user["userGroups"]))


def a_manager(state: TenantState) -> str:
    """A user who manages someone else."""
    return next(boss for user, boss in state.manager_of.items() if boss != user)


def test_renames_add_no_user_version_a_manager_change_adds_one_and_full_equals_incremental(
    client: AdmClient, state: TenantState, incremental: SyncSettings, full: SyncSettings
) -> None:
    both(incremental, full)
    users_before, groups_before = versions(full, "users_history"), versions(full, "groups_history")

    group_id = a_group_with_members(state)
    client.update_group(group_id, UpdateGroup(group_name="Renamed Group"))
    manager_id = a_manager(state)
    client.update_user_entities(
        manager_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, name="Renamed Manager")
    )
    both(incremental, full)

    # The renamed records gain a version each; the members and reports whose records embed the new names
    # gain none (the embedded copies changed in the service's JSON: the raw column shows them).
    assert added(users_before, versions(full, "users_history")) == {manager_id: 1}
    assert added(groups_before, versions(full, "groups_history")) == {group_id: 1}
    members = query(
        full.warehouse,
        "SELECT count(*) FROM users WHERE raw LIKE '%Renamed Group%' AND id <> ?",
        [manager_id],
    )
    assert members[0][0] > 0

    users_before = versions(full, "users_history")
    report_id, new_boss = next(
        (user, other) for user in state.manager_of for other in state.users if other not in (user, manager_id)
    )
    client.update_user_entities(report_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, manager_id=new_boss))
    both(incremental, full)

    assert added(users_before, versions(full, "users_history")) == {report_id: 1}
    current = query(
        full.warehouse, "SELECT manager_id FROM users_history WHERE id = ? AND is_current", [report_id]
    )
    assert current == [(new_boss,)]
    for table in ("users_history", "groups_history", "decisions_history", "delegations_history"):
        assert history(incremental, table) == history(full, table), table


def test_a_version_holds_the_typed_columns_of_its_time(
    client: AdmClient, state: TenantState, incremental: SyncSettings
) -> None:
    sync(incremental)
    user_id = a_manager(state)
    old_name = state.users[user_id]["name"]
    client.update_user_entities(user_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, name="Typed History"))
    run = sync(incremental)

    chain = query(
        incremental.warehouse,
        "SELECT name, is_current, valid_to IS NULL, run_id FROM users_history "
        "WHERE id = ? ORDER BY valid_from",
        [user_id],
    )
    assert [row[:3] for row in chain] == [(old_name, False, False), ("Typed History", True, True)]
    assert chain[1][3] == run.run_id
