"""The analyst views on real data (migration 0009, issue 11).

A tiny tenant is shaped through the service's own write endpoints (E1 for users, E3 for groups) into what
real tenants hold: a manager cycle (Ann reports to Ben, Ben to Cat, Cat to Ann) with a user under it, two
self-managed users, a deleted user with reports, two users of the same name, a group with two parents, an
inactive group, a deleted group with a child. Decisions and delegations have no write endpoint among the
14, so they are set in the emulator's records, as other tests do. One real sync over loopback HTTP loads
the warehouse, and every view's rows are asserted exactly, in UTC and in a Los Angeles session.

Then hand-made rows, committed by the real merge into a DuckDB file, cover what the emulator cannot be made
to send: a manager the warehouse does not hold, a parent cycle, membership copies older than their group's
rename, two tenants with the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from emulator.scale import Scale
from emulator.server import EmulatorServer
from emulator.service import Emulator, EmulatorOptions
from emulator.state import Record, TenantState
from models.groups import UpdateGroup
from models.users import UpdateUserEntities, UserGroupAssignment
from resources.client import AdmClient
from tests.conftest import DEMO_TENANT_ID, copy_of
from tests.sync_support import settings_for, sync
from tests.test_client_support import make_client
from tests.test_merge import commit
from warehouse.reads import read_only
from warehouse.schema import staging_schema

pytestmark = pytest.mark.xdist_group("test_views")  # its module fixture syncs: once, on one worker

TINY = Scale(
    users=12,
    decisions=4,
    delegations=9,
    documents=2,
    groups=7,
    actions=2,
    matrices=1,
    reports=1,
    notifications=2,
)
"""Just the records the scenario names, so that seeding and the one sync are quick."""

LOS_ANGELES = "America/Los_Angeles"

# label: name, parents, status, deleted. The seeded groups are renamed and re-parented in this order.
GROUPS: dict[str, tuple[str, list[str], str | None, bool]] = {
    "holdings": ("Acme Holdings", [], None, False),
    "americas": ("Americas", ["holdings"], None, False),
    "emea": ("EMEA", ["holdings"], None, False),
    "shared": ("Shared Services", ["americas", "emea"], None, False),
    "payroll": ("Payroll", ["shared"], "INACTIVE", False),
    "closed": ("Closed Office", ["americas"], None, True),
    "orphan": ("Orphan Team", ["closed"], None, False),
}

# label: first name, last name, manager, groups (primary first), positions, roles. "admin" is the seeded top
# user (it manages itself); "eve" is deleted below.
PEOPLE: dict[str, tuple[str, str, str, list[str], list[str], list[str]]] = {
    "admin": ("Integration", "Admin", "admin", ["holdings"], ["Chief Executive Officer"], ["Administrator"]),
    "bea": ("Bea", "Boss", "admin", ["americas", "shared"], ["VP Finance"], ["Viewer", "Approver"]),
    "sam1": ("Sam", "Lee", "bea", ["payroll", "americas"], ["Controller"], ["Approver"]),
    "sam2": ("Sam", "Lee", "sam1", ["payroll"], ["Accountant", "Analyst"], ["Viewer"]),
    "ann": ("Ann", "Cycle", "ben", ["emea"], ["Buyer"], ["Viewer"]),
    "ben": ("Ben", "Cycle", "cat", ["emea"], ["Buyer"], ["Viewer"]),
    "cat": ("Cat", "Cycle", "ann", ["emea"], ["Buyer"], ["Viewer"]),
    "dan": ("Dan", "Under", "ann", ["closed", "emea"], ["Analyst"], []),
    "sol": ("Sol", "Self", "sol", ["orphan"], ["General Counsel"], ["Auditor"]),
    "eve": ("Eve", "Gone", "bea", ["americas"], ["Buyer"], ["Viewer"]),
    "fay": ("Fay", "Orphan", "eve", ["americas"], ["Buyer"], ["Viewer"]),
    "gus": ("Gus", "Report", "fay", ["americas"], ["Buyer"], ["Viewer"]),
}
START = datetime(2020, 1, 6, tzinfo=UTC)
SAM_START = datetime(2024, 3, 1, tzinfo=UTC)
"""Midnight UTC: a DATE read as a timestamp in Los Angeles would show February 29."""
GUS_LEAVES = datetime(2026, 12, 31, tzinfo=UTC)

# label: name, status, authorities (type, value type, value, unit), groups.
DECISIONS: dict[str, tuple[str, str, list[tuple[str, str, str, str]], list[str]]] = {
    "capex": (
        "Approve capital spend",
        "PUBLISHED",
        [("Approve", "Currency", "250000", "USD"), ("Sign", "Currency", "Unlimited", "USD")],
        ["americas", "closed"],
    ),
    "contracts": ("Sign supplier contracts", "PUBLISHED", [("Approve", "Number", "10", "items")], ["emea"]),
    "writeoff": ("Write off bad debt", "ARCHIVED", [("Approve", "Currency", "5000", "EUR")], ["holdings"]),
    "fees": ("Waive late fees", "DELETED", [("Approve", "Percentage", "5", "%")], ["emea"]),
}
AUTHORITY_TYPES = {
    "Approve": ("6f0c5a52-8f7e-4a53-9a0e-1d8c3b2a0001", 0),
    "Sign": ("6f0c5a52-8f7e-4a53-9a0e-1d8c3b2a0002", 3),
}

# label: recipient, decision, status, start, end, created (UTC), revision ids.
DELEGATIONS: dict[str, tuple[str, str, str, str | None, str | None, str, list[str]]] = {
    # In force: the two of v_user_authorities.
    "live": ("sam1", "capex", "ACCEPTED", "2026-01-10", None, "2026-03-01T02:30", ["11", "12", "13"]),
    "issued": ("sam2", "contracts", "ISSUED", "2026-02-01", "2099-01-01", "2026-03-01T23:30", ["21"]),
    # Not in force, each for one reason.
    "suspended": ("dan", "capex", "SUSPENDED", None, None, "2026-02-28T12:00", ["31", "32"]),
    "deleted": ("ann", "contracts", "DELETED", None, None, "2026-01-15T12:00", ["41"]),
    "future": ("bea", "contracts", "ISSUED", "2099-01-01", None, "2026-01-15T12:00", ["51"]),
    "to_deleted_user": ("eve", "capex", "ISSUED", None, None, "2026-01-15T12:00", ["61"]),
    "archived_decision": ("ben", "writeoff", "ISSUED", None, None, "2026-01-15T12:00", ["71"]),
    "ended": ("cat", "capex", "ACCEPTED", "2026-01-01", "2026-06-30", "2026-01-15T12:00", ["81"]),
    "deleted_decision": ("sol", "fees", "ISSUED", None, None, "2026-01-15T12:00", ["91"]),
}


def stamp(moment: str | None) -> str | None:
    """A day or a UTC minute as the service writes timestamps."""
    if moment is None:
        return None
    return f"{moment}:00.000Z" if "T" in moment else f"{moment}T00:00:00.000Z"


def name_of(label: str) -> str:
    """A person's full name."""
    first, last, *_ = PEOPLE[label]
    return f"{first} {last}"


@dataclass(frozen=True)
class World:
    """The synced warehouse and the ids of the scenario's records by label."""

    warehouse: Path
    ids: dict[str, str]
    state: TenantState

    def id(self, label: str) -> str:
        """The id of a labelled record."""
        return self.ids[label]

    def all(self, *labels: str) -> list[str]:
        """Ids of labelled records, in order."""
        return [self.ids[label] for label in labels]


@pytest.fixture(scope="module")
def world(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The scenario, shaped through E1/E3 and the emulator's records, loaded by one real sync (into a copy
    of the migrated template: these tests are about the views, not migrating)."""
    with EmulatorServer(EmulatorOptions(scale=TINY)) as server:
        emulator = server.emulator
        state = emulator.tenants[DEMO_TENANT_ID]
        ids = {
            **dict(zip(GROUPS, state.groups, strict=True)),
            **dict(zip(PEOPLE, state.users, strict=True)),
            **dict(zip(DECISIONS, state.decisions, strict=True)),
            **dict(zip(DELEGATIONS, state.delegations, strict=True)),
        }
        with make_client(server) as client:
            shape_groups(client, state, ids)
            shape_people(client, state, ids)
        shape_decisions(emulator, state, ids)
        shape_delegations(emulator, state, ids)
        settings = settings_for(server, copy_of(template, tmp_path_factory.mktemp("views") / "wh.duckdb"))
        sync(settings)
        yield World(settings.warehouse, ids, state)


def shape_groups(client: AdmClient, state: TenantState, ids: dict[str, str]) -> None:
    """Names, parents, status and deletion through E3."""
    for label, (name, parents, status, deleted) in GROUPS.items():
        group_id = ids[label]
        present = {link.parent_id for link in state.group_parents[group_id]}
        wanted = {ids[parent] for parent in parents}
        changes: dict[str, Any] = {"groupName": name, "displayName": name}
        if wanted - present:
            changes["addParentGroupIds"] = sorted(wanted - present)
        if present - wanted:
            changes["removeParentGroupIds"] = sorted(present - wanted)
        if status:
            changes["status"] = status
        if deleted:
            changes["isDeleted"] = True
        client.update_group(group_id, UpdateGroup.model_validate(changes))


def shape_people(client: AdmClient, state: TenantState, ids: dict[str, str]) -> None:
    """Names, status, managers (the cycle too: E1 does not refuse one), memberships and dates through E1."""
    positions = {record["positionName"]: key for key, record in state.positions.items()}
    roles = {record["roleName"]: key for key, record in state.roles.items()}
    for label, (first, last, manager, groups, held, role_names) in PEOPLE.items():
        changes: dict[str, Any] = {
            "tenantId": DEMO_TENANT_ID,
            "firstName": first,
            "lastName": last,
            "status": "DELETED" if label == "eve" else "ACTIVE",
            "managerId": ids[manager],
            "groups": [
                UserGroupAssignment(group_id=ids[group], is_primary_org=order == 0)
                for order, group in enumerate(groups)
            ],
            "positionIds": [positions[name] for name in held],
            "roleIds": [roles[name] for name in role_names],
            "startDate": SAM_START if label == "sam1" else START,
        }
        if label == "gus":
            changes["terminationDate"] = GUS_LEAVES
        client.update_user_entities(ids[label], UpdateUserEntities.model_validate(changes))


def shape_decisions(emulator: Emulator, state: TenantState, ids: dict[str, str]) -> None:
    """Names, statuses, authority limits and groups of the decisions, in the emulator's records."""
    for label, (name, status, authorities, groups) in DECISIONS.items():
        decision_id = ids[label]
        decision = state.decisions[decision_id]
        decision.update(name=name, status=status)
        decision["decisionAuthorities"] = [authority(emulator, decision_id, *limit) for limit in authorities]
        decision["decisionGroups"] = [
            {
                "id": emulator.new_id(),
                "denormalizedDecisionId": decision_id,
                "groupId": ids[group],
                "tenantGroupTypeId": state.groups[ids[group]]["tenantGroupTypeId"],
                "displayName": "a copy",
                "groupName": "a copy",
            }
            for group in groups
        ]
    emulator.changed(state, "decisions")


def authority(
    emulator: Emulator, decision_id: str, kind: str, value_type: str, value: str, unit: str
) -> Record:
    """One authority limit as the service sends it."""
    type_id, order = AUTHORITY_TYPES[kind]
    return {
        "id": emulator.new_id(),
        "denormalizedDecisionId": decision_id,
        "authorityTypeId": type_id,
        "authorityType": kind,
        "authorityTypeOrder": order,
        "authorityTypeIcon": "check-circle",
        "authorityLimit": f"<= {value} {unit}",
        "authorityLimitValueType": value_type,
        "authorityLimitOperator": "<=",
        "authorityLimitValue": value,
        "authorityLimitValueUnit": unit,
    }


def shape_delegations(emulator: Emulator, state: TenantState, ids: dict[str, str]) -> None:
    """Recipients, decisions, statuses, dates and revisions of the delegations. The first carries stale
    copies of its decision's and recipient's names, as a record not re-read since a rename would."""
    for label, (recipient, decision, status, start, end, created, revisions) in DELEGATIONS.items():
        delegation_id = ids[label]
        state.delegations[delegation_id].update(
            decisionId=ids[decision],
            decisionName="Old decision name" if label == "live" else DECISIONS[decision][0],
            status=status,
            issuerType="USER",
            issuerId=ids["admin"],
            recipientId=ids[recipient],
            recipientName="Samuel Lee" if label == "live" else name_of(recipient),
            startDate=stamp(start),
            endDate=stamp(end),
            createdAt=stamp(created),
            updatedAt=stamp(created),
        )
        state.delegation_revisions[delegation_id] = revisions
    emulator.changed(state, "delegations")


def read(
    warehouse: Path, sql: str, params: list[Any] | None = None, time_zone: str = "UTC"
) -> list[tuple[Any, ...]]:
    """Rows of a query in a read-only session of the given time zone."""
    with read_only(warehouse) as con:
        assert con is not None
        con.execute(f"SET TimeZone = '{time_zone}'")
        return con.execute(sql, params or []).fetchall()


# -- v_org_chart -----------------------------------------------------------------------------------------

ORG_CHART = (
    "SELECT user_id, name, manager_id, manager_name, manager_is_deleted, top_id, levels_below_top, "
    "management_chain, management_chain_ids, chain_end, in_cycle, under_cycle, stopped_at_id "
    "FROM v_org_chart ORDER BY user_id"
)


def test_org_chart_stops_at_cycles_and_deleted_managers_and_roots_only_real_tops(world: World) -> None:
    w = world

    def row(label: str, chain: list[str], end: str = "top", stopped: str | None = None) -> tuple[Any, ...]:
        manager = PEOPLE[label][2]
        boss = None if manager == label else manager
        top = chain[0] if end == "top" else None
        return (
            w.id(label),
            name_of(label),
            w.ids.get(boss or ""),
            boss and name_of(boss),
            boss == "eve",
            w.ids.get(top or ""),
            len(chain) - 1 if top else None,
            [name_of(step) for step in chain],
            w.all(*chain),
            end,
            end == "cycle" and stopped == label,
            end == "cycle" and stopped != label,
            w.ids.get(stopped or ""),
        )

    expected = [
        # Two real tops, each managing themself in the service: manager_id NULL, one root each.
        row("admin", ["admin"]),
        row("sol", ["sol"]),
        row("bea", ["admin", "bea"]),
        row("sam1", ["admin", "bea", "sam1"]),
        # The same name twice in one chain: the ids tell the two apart.
        row("sam2", ["admin", "bea", "sam1", "sam2"]),
        # On the cycle: once round, stopped before the user comes again; no top, no level.
        row("ann", ["cat", "ben", "ann"], "cycle", "ann"),
        row("ben", ["ann", "cat", "ben"], "cycle", "ben"),
        row("cat", ["ben", "ann", "cat"], "cycle", "cat"),
        # Under the cycle: up to it and round it once, stopped where it entered.
        row("dan", ["cat", "ben", "ann", "dan"], "cycle", "ann"),
        # Eve is deleted: she has no row, and the chains of her reports stop below her.
        row("fay", ["fay"], "manager_deleted", "eve"),
        row("gus", ["fay", "gus"], "manager_deleted", "eve"),
    ]
    assert [r[10:12] for r in expected].count((True, False)) == 3
    assert [r[10:12] for r in expected].count((False, True)) == 1

    assert read(w.warehouse, ORG_CHART) == sorted(expected)
    # One root per real top, and no chain repeats a user.
    roots = read(w.warehouse, "SELECT DISTINCT top_id FROM v_org_chart WHERE levels_below_top = 0 ORDER BY 1")
    assert roots == sorted([(w.id("admin"),), (w.id("sol"),)])
    repeats = (
        "SELECT count(*) FROM v_org_chart WHERE len(list_distinct(management_chain_ids)) "
        "<> len(management_chain_ids) OR len(management_chain) <> len(management_chain_ids)"
    )
    assert read(w.warehouse, repeats) == [(0,)]


# -- v_group_tree ----------------------------------------------------------------------------------------

GROUP_TREE = (
    "SELECT group_id, group_name, display_name, group_type_name, status, depth, path, path_names, path_ids, "
    "root_id, parent_id, detached FROM v_group_tree ORDER BY path, group_id"
)


def test_group_tree_shows_both_paths_of_a_two_parent_group_and_no_deleted_group(world: World) -> None:
    w = world

    def row(label: str, *path: str) -> tuple[Any, ...]:
        name, _, status, _ = GROUPS[label]
        names = [GROUPS[step][0] for step in path]
        group = w.state.groups[w.id(label)]
        kind = w.state.group_types[group["tenantGroupTypeId"]]["groupTypeName"]
        ids = w.all(*path)
        parent = ids[-2] if len(ids) > 1 else None
        state = status or "ACTIVE"
        return (
            w.id(label),
            name,
            name,
            kind,
            state,
            len(ids) - 1,
            " > ".join(names),
            names,
            ids,
            ids[0],
            parent,
        )

    expected = [
        (*row("holdings", "holdings"), False),
        (*row("americas", "holdings", "americas"), False),
        # Two parents, two paths; and two below it for its child.
        (*row("shared", "holdings", "americas", "shared"), False),
        (*row("payroll", "holdings", "americas", "shared", "payroll"), False),
        (*row("emea", "holdings", "emea"), False),
        (*row("shared", "holdings", "emea", "shared"), False),
        (*row("payroll", "holdings", "emea", "shared", "payroll"), False),
        # Its only parent is deleted: it starts a path of its own, detached, rather than vanish.
        (*row("orphan", "orphan"), True),
    ]

    assert read(w.warehouse, GROUP_TREE) == sorted(expected, key=lambda r: (r[6], r[0]))
    # The deleted group is in the groups table, and nowhere in the tree.
    assert read(w.warehouse, "SELECT is_deleted FROM groups WHERE id = ?", [w.id("closed")]) == [(True,)]


# -- v_user_profile --------------------------------------------------------------------------------------

PROFILE = (
    "SELECT user_id, name, status, start_date, termination_date, manager_id, manager_name, "
    "manager_is_deleted, primary_group_id, primary_group_name, groups, group_ids, positions, roles "
    "FROM v_user_profile ORDER BY user_id"
)


def test_user_profile_lists_live_groups_primary_first_and_leaves_out_deleted_users(world: World) -> None:
    w = world
    positions = {record["positionName"]: key for key, record in w.state.positions.items()}
    expected = []
    for label, (first, last, manager, groups, held, roles) in PEOPLE.items():
        if label == "eve":
            continue  # deleted: no profile
        live = [group for group in groups if group != "closed"]
        primary = groups[0] if groups[0] != "closed" else None
        boss = None if manager == label else manager
        begins = (SAM_START if label == "sam1" else START).date()
        leaves = GUS_LEAVES.date() if label == "gus" else None
        expected.append(
            (
                w.id(label),
                f"{first} {last}",
                "ACTIVE",
                begins,
                leaves,
                w.ids.get(boss or ""),
                boss and name_of(boss),
                boss == "eve",
                w.ids.get(primary or ""),
                primary and GROUPS[primary][0],
                [GROUPS[group][0] for group in live],
                w.all(*live),
                sorted(held, key=lambda name: (name, positions[name])),
                sorted(roles),
            )
        )
    # Dan's primary group is the deleted one: no primary group, his other membership stays.
    dan = next(row for row in expected if row[0] == w.id("dan"))
    assert dan[8:12] == (None, None, ["EMEA"], [w.id("emea")])

    assert read(w.warehouse, PROFILE) == sorted(expected)


# -- v_authority_limits and v_user_authorities -----------------------------------------------------------


def limits(label: str) -> list[tuple[Any, ...]]:
    """A decision's authority limits as the scenario set them: decision id, name and status, authority
    type, value type, value, number, unit and whether it is unlimited."""
    name, status, authorities, _ = DECISIONS[label]
    rows = []
    for kind, value_type, value, unit in authorities:
        unlimited = value == "Unlimited"
        number = None if unlimited else float(value)
        rows.append((label, name, status, kind, value_type, value, number, unit, unlimited))
    return rows


def test_authority_limits_leave_out_deleted_decisions(world: World) -> None:
    found = read(
        world.warehouse,
        "SELECT decision_id, decision_name, status, authority_type, value_type, limit_value, limit_number, "
        "limit_unit, is_unlimited FROM v_authority_limits ORDER BY ALL",
    )
    # Every limit of every decision but the deleted one; an archived decision's limits are listed.
    expected = [
        (world.id(label), *rest) for label in ("capex", "contracts", "writeoff") for _, *rest in limits(label)
    ]
    assert found == sorted(expected)
    assert limits("capex")[1][5:] == ("Unlimited", None, "USD", True)
    fees = "SELECT status, is_deleted FROM decisions WHERE id = ?"
    assert read(world.warehouse, fees, [world.id("fees")]) == [("DELETED", True)]


def test_user_authorities_come_from_delegations_in_force_and_flag_a_deleted_recipient(world: World) -> None:
    w = world
    found = read(
        w.warehouse,
        "SELECT user_id, user_name, decision_id, decision_name, authority_type, limit_value, limit_number, "
        "limit_unit, is_unlimited, delegation_id, delegation_status, group_ids, group_names, "
        "user_is_deleted, user_is_inactive, user_is_terminated, user_is_unknown, user_can_act "
        "FROM v_user_authorities ORDER BY ALL",
    )

    def held(user: str, delegation: str, groups: list[str], deleted: bool = False) -> list[tuple[Any, ...]]:
        decision, status = DELEGATIONS[delegation][1:3]
        through = (w.id(delegation), status, w.all(*groups), [GROUPS[group][0] for group in groups])
        flags = (deleted, False, False, False, not deleted)
        return [
            (
                w.id(user),
                name_of(user),
                w.id(decision),
                name,
                kind,
                value,
                number,
                unit,
                unlimited,
                *through,
                *flags,
            )
            for _, name, _, kind, _, value, number, unit, unlimited in limits(decision)
        ]

    # The two delegations in force to live users; the two Sam Lees, each through their own. The capex
    # decision also applies to the deleted Closed Office: only Americas is listed. Eve left (her user record
    # is deleted) and still holds the capex delegation: an audit must see it, flagged.
    expected = (
        held("sam1", "live", ["americas"])
        + held("sam2", "issued", ["emea"])
        + held("eve", "to_deleted_user", ["americas"], deleted=True)
    )
    assert len(expected) == 5
    assert found == sorted(expected)
    # The others were loaded, and left out for their one reason each.
    assert read(w.warehouse, "SELECT count(*) FROM delegations") == [(len(DELEGATIONS),)]


def test_decision_scope_reaches_groups_below_a_named_group_through_it(world: World) -> None:
    w = world
    found = read(
        w.warehouse,
        "SELECT decision_id, group_id, group_name, via_group_id, levels_below, through_ancestor "
        "FROM v_decision_scope WHERE decision_id IN (?, ?) ORDER BY ALL",
        w.all("capex", "contracts"),
    )

    def reach(decision: str, via: str, *below: str) -> list[tuple[Any, ...]]:
        groups = [via, *below]
        return [
            (w.id(decision), w.id(group), GROUPS[group][0], w.id(via), level, level > 0)
            for level, group in enumerate(groups)
        ]

    # Capex names Americas and the deleted Closed Office: Shared Services and Payroll are below Americas;
    # nothing is reached through the deleted group (its child Orphan Team is detached).
    expected = reach("capex", "americas", "shared", "payroll") + reach(
        "contracts", "emea", "shared", "payroll"
    )
    assert found == sorted(expected)
    # Who can approve for Shared Services: nobody through a decision naming it; three through an ancestor
    # (the two Sam Lees, and Eve, who left and is flagged).
    holders = read(
        w.warehouse,
        "SELECT s.through_ancestor, a.user_id, a.user_can_act FROM v_user_authorities a "
        "JOIN v_decision_scope s ON s.tenant_id = a.tenant_id AND s.decision_id = a.decision_id "
        "WHERE s.group_id = ? GROUP BY ALL ORDER BY ALL",
        [w.id("shared")],
    )
    assert holders == sorted(
        [(True, w.id("sam1"), True), (True, w.id("sam2"), True), (True, w.id("eve"), False)]
    )


# -- v_delegation_activity and v_delegation_activity_daily -----------------------------------------------


def test_delegation_activity_keeps_deleted_delegations_flagged_with_current_names(world: World) -> None:
    w = world
    found = read(
        w.warehouse,
        "SELECT delegation_id, decision_id, decision_name, status, recipient_id, recipient_name, is_deleted, "
        "deleted_at IS NOT NULL, revisions, latest_revision_order FROM v_delegation_activity ORDER BY ALL",
    )
    expected = [
        (
            w.id(label),
            w.id(decision),
            DECISIONS[decision][0],
            status,
            w.id(recipient),
            name_of(recipient),
            status == "DELETED",
            status == "DELETED",
            len(revisions),
            len(revisions),
        )
        for label, (recipient, decision, status, _, _, _, revisions) in DELEGATIONS.items()
    ]
    assert found == sorted(expected)


DAILY = "SELECT day, revisions_seen, delegations_created FROM v_delegation_activity_daily ORDER BY day"


def test_daily_buckets_and_dates_are_utc_days_in_any_session_time_zone(world: World) -> None:
    w = world
    ((seen,),) = read(w.warehouse, "SELECT DISTINCT first_seen_at FROM delegation_revisions")
    today = seen.astimezone(UTC).date()
    revisions = sum(len(item[6]) for item in DELEGATIONS.values())
    expected = [
        (date(2026, 1, 15), 0, 6),
        (date(2026, 2, 28), 0, 1),
        # 02:30 and 23:30 UTC: one UTC day, though Los Angeles sees the first on February 28.
        (date(2026, 3, 1), 0, 2),
        (today, revisions, 0),
    ]

    assert read(w.warehouse, DAILY) == expected
    assert read(w.warehouse, DAILY, time_zone=LOS_ANGELES) == expected
    # The plain cast the views no longer use would have moved it: the check above means something.
    plain = "SELECT CAST(created_at AS DATE) FROM delegations WHERE id = ?"
    assert read(w.warehouse, plain, [w.id("live")], LOS_ANGELES) == [(date(2026, 2, 28),)]
    # Every view reads the same in Los Angeles (DATE columns included: Sam's start date stays March 1).
    for sql in (
        ORG_CHART,
        GROUP_TREE,
        PROFILE,
        "SELECT * FROM v_user_authorities ORDER BY ALL",
        "SELECT * EXCLUDE (latest_revision_seen_at, deleted_at) FROM v_delegation_activity ORDER BY ALL",
    ):
        assert read(w.warehouse, sql, time_zone=LOS_ANGELES) == read(w.warehouse, sql), sql
    sam = "SELECT start_date FROM v_user_profile WHERE user_id = ?"
    assert read(w.warehouse, sam, [w.id("sam1")], LOS_ANGELES) == [(date(2024, 3, 1),)]


# -- hand-made rows: what the service cannot be made to send ---------------------------------------------

TENANT, OTHER = "tenant-a", "tenant-b"


def row(table: str, **values: Any) -> dict[str, Any]:
    """One staged row of ``table``; the bookkeeping columns a run stages get placeholders."""
    columns = staging_schema(table).names
    return (
        {"tenant_id": TENANT, **{key: "x" for key in ("content_hash",) if key in columns}}
        | ({"raw": "{}"} if "raw" in columns else {})
        | values
    )


@pytest.fixture(scope="module")
def handmade(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse holding hand-made rows, committed by the real merge (so history holds them too) into a
    copy of the migrated template."""
    path = copy_of(template, tmp_path_factory.mktemp("handmade") / "wh.duckdb")
    commit(
        path,
        {
            # The manager is not in the warehouse; a manager the service sent as null is a top.
            "users": [
                row("users", id="u1", name="Una", manager_id="gone", is_deleted=False),
                row("users", id="u2", name="Vic", manager_id="u1", is_deleted=False),
                row("users", id="u3", name="Wes", manager_id=None, is_deleted=False),
            ],
            # A group renamed since Vic's record copied its name, and one the warehouse does not hold; a
            # position renamed, another deleted.
            "user_groups": [
                row(
                    "user_groups",
                    id="m1",
                    user_id="u2",
                    group_id="g1",
                    group_name="Old Name",
                    group_order=1,
                    is_primary=True,
                ),
                row(
                    "user_groups",
                    id="m2",
                    user_id="u2",
                    group_id="unknown",
                    group_name="Copied Name",
                    group_order=2,
                    is_primary=False,
                ),
            ],
            "user_positions": [
                row(
                    "user_positions",
                    id="l1",
                    user_id="u2",
                    item_order=1,
                    position_id="pos1",
                    position_name="Old Title",
                ),
                row(
                    "user_positions",
                    id="l2",
                    user_id="u2",
                    item_order=2,
                    position_id="pos2",
                    position_name="Dropped Title",
                ),
            ],
            "user_roles": [],
            # A parent cycle (which the service refuses) with a child.
            "groups": [
                row("groups", id=key, group_name=name, is_deleted=False, status="ACTIVE")
                for key, name in (("g1", "New Name"), ("p", "P"), ("q", "Q"), ("r", "R"))
            ],
            "group_parents": [
                row("group_parents", id=f"e{order}", group_id=child, item_order=1, parent_id=parent)
                for order, (child, parent) in enumerate((("p", "q"), ("q", "p"), ("r", "p")), start=1)
            ],
            "positions": [
                row("positions", id="pos1", position_name="Current Title", is_deleted=False),
                row("positions", id="pos2", position_name="Dropped Title", is_deleted=True),
            ],
        },
        tenant=TENANT,
    )
    # Another tenant holds the same ids with other managers: nothing crosses over.
    commit(
        path,
        {
            "users": [
                row("users", tenant_id=OTHER, id="u1", name="Xia", manager_id="u1", is_deleted=False),
                row("users", tenant_id=OTHER, id="u2", name="Yan", manager_id="u1", is_deleted=False),
            ]
        },
        tenant=OTHER,
    )
    return path


def test_a_manager_missing_from_the_warehouse_stops_the_chain_and_tenants_do_not_mix(handmade: Path) -> None:
    found = read(
        handmade,
        "SELECT tenant_id, user_id, manager_id, manager_name, top_id, levels_below_top, "
        "management_chain_ids, chain_end, stopped_at_id FROM v_org_chart ORDER BY ALL",
    )
    assert found == [
        (TENANT, "u1", "gone", None, None, None, ["u1"], "manager_missing", "gone"),
        (TENANT, "u2", "u1", "Una", None, None, ["u1", "u2"], "manager_missing", "gone"),
        (TENANT, "u3", None, None, "u3", 0, ["u3"], "top", None),
        (OTHER, "u1", None, None, "u1", 0, ["u1"], "top", None),
        (OTHER, "u2", "u1", "Xia", "u1", 1, ["u1", "u2"], "top", None),
    ]


def test_a_group_no_root_reaches_still_has_a_detached_row(handmade: Path) -> None:
    found = read(
        handmade, "SELECT group_id, depth, path, root_id, parent_id, detached FROM v_group_tree ORDER BY 1"
    )
    assert found == [
        ("g1", 0, "New Name", "g1", None, False),
        ("p", 0, "P", "p", None, True),
        ("q", 0, "Q", "q", None, True),
        ("r", 0, "R", "r", None, True),
    ]


def test_profiles_show_current_group_and_position_names(handmade: Path) -> None:
    found = read(
        handmade,
        "SELECT primary_group_name, groups, group_ids, positions, position_ids, roles FROM v_user_profile "
        "WHERE tenant_id = 'tenant-a' AND user_id = 'u2'",
    )
    # The group the warehouse does not hold keeps the name the membership copied.
    assert found == [
        ("New Name", ["New Name", "Copied Name"], ["g1", "unknown"], ["Current Title"], ["pos1"], [])
    ]
