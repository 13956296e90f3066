"""History means something: a version is a change of the record itself, the same whether the runs read
incrementally or in full. Real syncs over loopback HTTP from the small emulator, changed through the
service's own write endpoints (E1, E3) between runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState, now
from models.groups import UpdateGroup
from models.users import UpdateUserEntities, UserGroupAssignment
from pipelines.settings import SyncSettings
from resources.client import AdmClient
from tests.conftest import DEMO_TENANT_ID, copy_of, fetch_all, fresh
from tests.sync_support import only_run, query, settings_for, sync
from tests.test_client_support import make_client
from warehouse.db import open_database
from warehouse.rehash import SCHEME_KEY, hashed_lists
from warehouse.rows import CONTENT_HASH_SCHEME
from warehouse.schema import row_digest


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
def incremental(server: EmulatorServer, synced: Path) -> SyncSettings:
    """A warehouse kept by nightly (incremental) runs, after its first run (a copy of the synced template:
    what a first run of the fresh emulator commits)."""
    return settings_for(server, synced)


@pytest.fixture
def full(server: EmulatorServer, template: Path, tmp_path: Path) -> SyncSettings:
    """A warehouse kept by full refreshes (new: a copy of the migrated template)."""
    return settings_for(server, copy_of(template, tmp_path / "full.duckdb"))


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
    sync(full, full_refresh=True)  # the incremental warehouse has had its first run
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


# -- the items of a record's lists: memberships, limits, parent links -------------------------------------

CHILD_HISTORIES = (
    "user_groups_history",
    "user_roles_history",
    "user_positions_history",
    "decision_groups_history",
    "decision_authorities_history",
    "decision_documents_history",
    "group_parents_history",
)

AS_OF = {
    # macro: the columns compared, and how the service's records of then give the same rows.
    "user_groups_as_of": "user_id, group_id, is_primary",
    "decision_authorities_as_of": "decision_id, authority_type_id, limit_value",
    "group_parents_as_of": "group_id, parent_id",
}


def service_items(http: httpx.Client) -> dict[str, list[tuple[Any, ...]]]:
    """The items of the service's lists as its raw JSON says now, read over HTTP (not through our models):
    memberships (the first is the primary), authority limits and parent links."""
    users = fetch_all(http, "/auth/v1/user")
    decisions = fetch_all(http, "/decision/v1/decisions")
    groups = fetch_all(http, "/settings/v1/groups", {"tenantId": DEMO_TENANT_ID})
    return {
        "user_groups_as_of": sorted(
            (user["id"], item["groupId"], place == 0)
            for user in users
            for place, item in enumerate(user["userGroups"])
        ),
        "decision_authorities_as_of": sorted(
            (decision["id"], item["authorityTypeId"], item["authorityLimitValue"])
            for decision in decisions
            for item in decision["decisionAuthorities"]
        ),
        "group_parents_as_of": sorted(
            (group["id"], link["parentId"]) for group in groups for link in group["parentGroups"]
        ),
    }


def as_of(settings: SyncSettings, macro: str, moment: datetime) -> list[tuple[Any, ...]]:
    """The compared columns of an as-of macro's rows at ``moment``, sorted."""
    sql = f"SELECT {AS_OF[macro]} FROM {macro}(?) WHERE tenant_id = ? ORDER BY ALL"  # noqa: S608 - test names
    return query(settings.warehouse, sql, [moment, DEMO_TENANT_ID])


def committed_at(settings: SyncSettings, run_id: str) -> datetime:
    """The commit time of a run (its versions' valid_from)."""
    found = query(settings.warehouse, "SELECT finished_at FROM sync_runs WHERE run_id = ?", [run_id])
    moment: datetime = found[0][0]
    return moment


def rows_of(settings: SyncSettings) -> dict[str, tuple[int, int]]:
    """Versions of each child history table: all of them, and those ended."""
    return {
        table: tuple(query(settings.warehouse, f"SELECT count(*), count(valid_to) FROM {table}")[0])  # noqa: S608
        for table in CHILD_HISTORIES
    }


def grown(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """Versions added and versions ended per table, where any were."""
    changes = {
        table: (after[table][0] - before[table][0], after[table][1] - before[table][1]) for table in after
    }
    return {table: change for table, change in changes.items() if change != (0, 0)}


def test_a_membership_a_limit_and_a_reparent_each_add_one_version_and_as_of_gives_each_commit(
    client: AdmClient, state: TenantState, emulator: Emulator, incremental: SyncSettings, http: httpx.Client
) -> None:
    seen = {only_run(incremental.warehouse)[0]: service_items(http)}
    start = rows_of(incremental)

    # A membership: one more group for a user (appended: not the primary).
    user_id = next(key for key, user in state.users.items() if user["userGroups"])
    present = [item["groupId"] for item in state.users[user_id]["userGroups"]]
    joined = next(group for group in state.groups if group not in present)
    assignments = [
        UserGroupAssignment(group_id=group, is_primary_org=not place)
        for place, group in enumerate([*present, joined])
    ]
    client.update_user_entities(user_id, UpdateUserEntities(tenant_id=DEMO_TENANT_ID, groups=assignments))
    second = sync(incremental)
    seen[second.run_id] = service_items(http)
    after_membership = rows_of(incremental)
    assert grown(start, after_membership) == {"user_groups_history": (1, 0)}

    # A limit: a new value of one authority limit (decisions have no write endpoint among the 14); and a
    # reparent: a group moved from its parent to another group (E3).
    decision_id = next(key for key, record in state.decisions.items() if record["decisionAuthorities"])
    limit = state.decisions[decision_id]["decisionAuthorities"][0]
    old_value = limit["authorityLimitValue"]
    limit["authorityLimitValue"] = f"{old_value}0"
    state.decisions[decision_id]["updatedAt"] = now()
    emulator.changed(state, "decisions", decision_id)
    # A leaf (a group no group has as parent) can move under any other group without making a cycle.
    parents = {link.parent_id for links in state.group_parents.values() for link in links}
    moved, old_parent = next(
        (group, links[0].parent_id)
        for group, links in state.group_parents.items()
        if len(links) == 1 and group not in parents
    )
    new_parent = next(group for group in state.groups if group not in (moved, old_parent))
    client.update_group(
        moved, UpdateGroup(add_parent_group_ids=[new_parent], remove_parent_group_ids=[old_parent])
    )
    third = sync(incremental)
    seen[third.run_id] = service_items(http)

    assert grown(after_membership, rows_of(incremental)) == {
        "decision_authorities_history": (1, 1),
        "group_parents_history": (1, 1),
    }
    # Each commit instant shows exactly what the service held when that run read it.
    for run_id, items in seen.items():
        moment = committed_at(incremental, run_id)
        for macro, expected in items.items():
            assert as_of(incremental, macro, moment) == expected, (macro, run_id)
    assert (
        as_of(incremental, "group_parents_as_of", committed_at(incremental, third.run_id))
        != seen[second.run_id]["group_parents_as_of"]
    )
    # The change log names each change, its before and after, and the run that saw it.
    changes = query(
        incremental.warehouse,
        "SELECT entity, id, item, field, before, after, run_id FROM v_changes "
        "WHERE entity IN ('user_groups', 'group_parents') OR field = 'limit_value'",
    )
    assert sorted(changes, key=str) == sorted(
        [
            ("user_groups", user_id, joined, "group_id", None, joined, second.run_id),
            (
                "decision_authorities",
                decision_id,
                limit["authorityTypeId"],
                "limit_value",
                old_value,
                f"{old_value}0",
                third.run_id,
            ),
            ("group_parents", moved, old_parent, "parent_id", old_parent, None, third.run_id),
            ("group_parents", moved, new_parent, "parent_id", None, new_parent, third.run_id),
        ],
        key=str,
    )


def current_hashes(settings: SyncSettings, table: str) -> list[tuple[Any, ...]]:
    """Each current record's id and content hash."""
    return query(settings.warehouse, f"SELECT id, content_hash FROM {table} ORDER BY id")  # noqa: S608


def test_hashes_of_an_earlier_definition_are_computed_again_and_add_no_version(full: SyncSettings) -> None:
    """A release that changes what a content hash covers (`CONTENT_HASH_SCHEME`) meets warehouses whose
    stored hashes follow the earlier definition: its first commit computes them again from ``raw`` before
    it compares anything, so an unchanged tenant gains no version and every stored hash is one a sync
    computes."""
    sync(full, full_refresh=True)
    lists = [entry.name for entry in hashed_lists()]
    hashes = {name: current_hashes(full, name) for name in lists}
    before = {name: versions(full, f"{name}_history") for name in lists}
    earlier = "content_hash = 'earlier ' || content_hash"
    # The file as an earlier definition left it, written as the product's writers write it.
    with open_database(full.warehouse) as con:
        con.execute(
            "UPDATE warehouse_meta SET value = ? WHERE key = ?", [str(CONTENT_HASH_SCHEME - 1), SCHEME_KEY]
        )
        for name in lists:
            con.execute(f"UPDATE {name} SET {earlier}")  # noqa: S608
            con.execute(f"UPDATE {name} SET row_digest = {row_digest(name)}")  # noqa: S608 - of the row as left
            con.execute(f"UPDATE {name}_history SET {earlier} WHERE is_current")  # noqa: S608

    run = sync(full, full_refresh=True)

    counts = query(full.warehouse, "SELECT row_counts FROM sync_runs WHERE run_id = ?", [run.run_id])
    counted = json.loads(counts[0][0])
    for name in lists:
        assert counted[name]["updated"] == 0, name  # the run tells the truth: nothing changed
        assert versions(full, f"{name}_history") == before[name], name
        assert current_hashes(full, name) == hashes[name], name
        stale = (
            f"SELECT count(*) FROM {name}_history h JOIN {name} c USING (tenant_id, id) "  # noqa: S608
            "WHERE h.is_current AND h.content_hash <> c.content_hash"
        )
        assert query(full.warehouse, stale) == [(0,)], name
    scheme = query(full.warehouse, "SELECT value FROM warehouse_meta WHERE key = ?", [SCHEME_KEY])
    assert scheme == [(str(CONTENT_HASH_SCHEME),)]
