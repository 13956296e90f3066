"""The tenant sync end to end: real Dagster runs of the sync jobs against the emulator into a real DuckDB
file."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from emulator import render
from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState
from models.base import format_timestamp
from pipelines.extract import DEFAULT_OVERLAP
from pipelines.settings import SyncSettings
from pipelines.tenant_runs import TenantRun
from resources.catalog import PAGED_LISTS
from tests.conftest import (
    DEMO_TENANT_ID,
    DEMO_TOKEN,
    OTHER_TENANT_ID,
    fresh,
    loopback,
    set_faults,
    shared_http,
)
from tests.sync_support import query, settings_for
from tests.sync_support import sync as run_sync


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh: every test here runs whole syncs."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def settings(server: EmulatorServer, migrated: Path) -> SyncSettings:
    """Settings of a new warehouse (a copy of the migrated template), pointed at the session emulator."""
    return settings_for(server, migrated)


@pytest.fixture
def resynced(server: EmulatorServer, synced: Path) -> SyncSettings:
    """Settings of a warehouse that has had its first run (a copy of the synced template): for the tests
    of what the runs after it do."""
    return settings_for(server, synced)


@pytest.fixture
def first_run(server: EmulatorServer, synced_template: Path) -> SyncSettings:
    """Settings of the session's first run of the fresh emulator (the synced template), for the tests that
    only read what a first run commits: they must not write (``rows`` opens it read-only)."""
    return settings_for(server, synced_template)


@pytest.fixture
def state(emulator: Emulator) -> TenantState:
    """The demo tenant's records as the emulator holds them."""
    return emulator.tenants[DEMO_TENANT_ID]


def sync(settings: SyncSettings, full_refresh: bool = False) -> TenantRun:
    """One run of the demo tenant that must succeed."""
    return run_sync(settings, full_refresh=full_refresh)


def rows(settings: SyncSettings, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Query the committed warehouse."""
    return query(settings.warehouse, sql, params)


def ids(settings: SyncSettings, table: str, column: str = "id") -> set[str]:
    """Every value of one column."""
    return {row[0] for row in rows(settings, f"SELECT {column} FROM {table}")}  # noqa: S608 - test names


def listed_ids(settings: SyncSettings, table: str) -> set[str]:
    """The ids of a record table the service still lists (not soft-deleted by a full read)."""
    query = f"SELECT id FROM {table} WHERE NOT (is_deleted AND deleted_at > synced_at)"  # noqa: S608
    return {row[0] for row in rows(settings, query)}


def mutate(server: EmulatorServer, **changes: Any) -> dict[str, list[str]]:
    """Change the service behind the client's back."""
    response = shared_http().post(f"{server.base_url}/_admin/mutate", json=changes)
    response.raise_for_status()
    result: dict[str, list[str]] = response.json()
    return result


def requests_by_endpoint(server: EmulatorServer) -> dict[str, int]:
    """What the emulator served since its counters were last reset."""
    counts: dict[str, int] = shared_http().get(f"{server.base_url}/_admin/stats").json()["requests"]
    return counts


def nested(state: TenantState, key: str) -> set[str]:
    """Ids of one nested list of every decision."""
    return {item["id"] for decision in state.decisions.values() for item in decision[key]}


RUN_DEPENDENT = frozenset(
    {
        "run_id",
        "started_at",
        "finished_at",
        "phase_seconds",
        "synced_at",
        "valid_from",
        "first_seen_at",
        "updated_at",
    }
)
"""The columns that hold which run wrote a row and when it ran (and how long its phases took)."""


def test_the_synced_template_is_what_a_first_run_commits(
    settings: SyncSettings, synced_template: Path
) -> None:
    """The warehouses of `first_run` and `resynced` (the synced template, made once a worker) stand for a
    test's own first run of the freshly reset emulator: one now commits the very same rows, column by
    column, but for the run's id and the instants it ran at (the seed fixes every id and timestamp the
    emulator serves, whenever it is reset)."""
    sync(settings)

    assert _content(settings.warehouse) == _content(synced_template)


def _content(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, sorted, without the `RUN_DEPENDENT` columns."""
    with duckdb.connect(str(path), read_only=True) as con:
        columns: dict[str, list[str]] = {}
        for table, column in con.execute(
            "SELECT table_name, column_name FROM information_schema.columns JOIN information_schema.tables "
            "USING (table_schema, table_name) WHERE table_type = 'BASE TABLE' ORDER BY ALL"
        ).fetchall():
            columns.setdefault(table, [])
            if column not in RUN_DEPENDENT:
                columns[table].append(f'"{column}"')
        content = {
            table: sorted(con.execute(f'SELECT {", ".join(names)} FROM "{table}"').fetchall(), key=repr)  # noqa: S608
            for table, names in columns.items()
        }
    # The run log's JSON lists and objects are assembled as concurrent reads finish: compared as sets.
    content["sync_runs"] = [tuple(map(_unordered, row)) for row in content["sync_runs"]]
    return content


def _unordered(value: Any) -> Any:
    """A JSON text as its items, without their order (anything else as it is)."""
    if not isinstance(value, str) or value[:1] not in ("{", "["):
        return value
    parsed = orjson.loads(value)
    items = parsed.items() if isinstance(parsed, dict) else parsed
    return sorted(json.dumps(item, sort_keys=True) for item in items)


def test_full_run_loads_every_record_of_every_table(first_run: SyncSettings, state: TenantState) -> None:
    assert listed_ids(first_run, "decisions") == set(state.decisions)
    assert ids(first_run, "decision_groups") == nested(state, "decisionGroups")
    assert ids(first_run, "decision_authorities") == nested(state, "decisionAuthorities")
    assert ids(first_run, "decision_documents") == nested(state, "decisionDocuments")
    assert listed_ids(first_run, "delegations") == set(state.delegations)
    assert listed_ids(first_run, "users") == set(state.users)
    assert listed_ids(first_run, "groups") == set(state.groups)
    assert listed_ids(first_run, "positions") == set(state.positions)
    assert ids(first_run, "user_roles") == {r["id"] for u in state.users.values() for r in u["userRoles"]}
    assert ids(first_run, "user_groups") == {g["id"] for u in state.users.values() for g in u["userGroups"]}
    assert ids(first_run, "current_user_positions") == {
        p["id"] for p in state.users[state.current_user_id]["userPositions"]
    }


def test_full_run_copies_fields_and_links_faithfully(first_run: SyncSettings, state: TenantState) -> None:
    for decision_id, name, status, display_id in rows(
        first_run, "SELECT id, name, status, decision_display_id FROM decisions ORDER BY id LIMIT 50"
    ):
        source = state.decisions[decision_id]
        assert (name, status, display_id) == (source["name"], source["status"], source["decisionDisplayId"])
    managers = dict(rows(first_run, "SELECT id, manager_id FROM users"))
    assert managers == state.manager_of
    parents = set(rows(first_run, "SELECT group_id, parent_id FROM group_parents"))
    assert parents == {(g, link.parent_id) for g, links in state.group_parents.items() for link in links}
    cities = dict(rows(first_run, "SELECT id, address_city FROM groups"))
    assert cities == {g: record["address"]["city"] for g, record in state.groups.items()}


def test_revision_lists_match_the_service_in_order(first_run: SyncSettings, state: TenantState) -> None:
    delegation_revisions = _lists(
        rows(first_run, "SELECT delegation_id, revision_id, revision_order FROM delegation_revisions")
    )
    assert delegation_revisions == {
        key: sorted(value, key=int) for key, value in state.delegation_revisions.items()
    }
    referenced = {item["documentId"] for d in state.decisions.values() for item in d["decisionDocuments"]}
    document_revisions = _lists(
        rows(first_run, "SELECT document_id, revision_id, revision_order FROM document_revisions")
    )
    assert document_revisions == {key: sorted(state.document_revisions[key], key=int) for key in referenced}


def _lists(found: list[tuple[Any, ...]]) -> dict[str, list[str]]:
    grouped: dict[str, list[tuple[int, str]]] = {}
    for parent, revision, order in found:
        grouped.setdefault(parent, []).append((order, revision))
    return {parent: [revision for _, revision in sorted(items)] for parent, items in grouped.items()}


def test_authority_limits_are_parsed_to_numbers(first_run: SyncSettings) -> None:
    parsed = rows(
        first_run, "SELECT limit_value, limit_number, is_unlimited, value_type FROM decision_authorities"
    )
    for value, number, unlimited, value_type in parsed:
        if value == "Unlimited":
            assert unlimited and number is None
        elif value_type == "Authorized":
            assert number is None and not unlimited
        else:
            assert number == float(value)


def test_incremental_run_fetches_only_what_changed(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    windows = {
        entity: format_timestamp(cursor - DEFAULT_OVERLAP)
        for entity, cursor in rows(resynced, "SELECT entity, cursor_value FROM extract_cursors")
    }
    checked = {kind: set[str]() for kind in ("delegation", "document")}
    for kind, parent in rows(resynced, "SELECT parent_kind, parent_id FROM revision_checks"):
        checked[kind].add(parent)
    changed = mutate(
        server,
        decisionsUpdated=5,
        decisionsInserted=3,
        delegationsUpdated=4,
        delegationsInserted=1,
        usersUpdated=2,
        groupsUpdated=1,
    )
    server.emulator.reset_stats()

    sync(resynced)

    # The lists are asked for what changed since each cursor (minus the overlap window): one page each.
    window = {d for d, r in state.delegations.items() if r["updatedAt"] >= windows["delegations"]}
    assert set(changed["delegationsUpdated"]) | set(changed["delegationsInserted"]) <= window
    assert len(window) < len(state.delegations) // 4
    # Revision ids only of the records that changed, and of this run's share of the re-verification.
    delegations = set(changed["delegationsUpdated"]) | set(changed["delegationsInserted"])
    decisions = set(changed["decisionsUpdated"]) | set(changed["decisionsInserted"])
    documents = {item["documentId"] for d in decisions for item in state.decisions[d]["decisionDocuments"]}
    rechecked = {kind: set[str]() for kind in ("delegation", "document")}
    for kind, parent in rows(resynced, "SELECT parent_kind, parent_id FROM revision_rechecks"):
        rechecked[kind].add(parent)
    # One page of each list (from the catalog: two lists of one endpoint are two pages of it).
    assert requests_by_endpoint(server) == {
        **Counter(paged.endpoint for paged in PAGED_LISTS.values()),
        "E9": 1,
        "E11": len(delegations | rechecked["delegation"]),
        "E12": len(documents | rechecked["document"]),
    }
    # The second of 30 shares (ADM_REVISION_RECHECK_DAYS) of the lists the first run checked, all at one
    # time, so in the order of their ids; those a changed record named were asked for as changed anyway.
    for kind, named in (("delegation", delegations), ("document", documents)):
        share = math.ceil(len(checked[kind]) * 2 / 30) - math.ceil(len(checked[kind]) / 30)
        assert rechecked[kind] == set(sorted(checked[kind])[:share]) - named
    names = dict(rows(resynced, "SELECT id, name FROM decisions"))
    assert names == {d: record["name"] for d, record in state.decisions.items()}


def test_a_group_disabled_with_remove_associations_loses_its_members_at_the_next_nightly_run(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    # Before: the members' updatedOn does not move, so the incremental run kept the memberships until the
    # weekly full refresh (and the audit trail dated the removal then).
    group_id = next(item["groupId"] for user in state.users.values() for item in user["userGroups"])
    members = {user_id for user_id, user in state.users.items() if group_id in _group_ids(user)}
    stamps = {user_id: state.users[user_id]["updatedOn"] for user_id in members}
    body = {"status": "INACTIVE", "disableOption": "REMOVE_ASSOCIATIONS"}
    with loopback(base_url=server.base_url, headers={"Authorization": f"Bearer {DEMO_TOKEN}"}) as http:
        http.patch(f"/settings/v1/groups/{group_id}", json=body).raise_for_status()
    assert {user_id: state.users[user_id]["updatedOn"] for user_id in members} == stamps

    sync(resynced)

    mode = rows(resynced, "SELECT mode FROM sync_runs ORDER BY finished_at DESC LIMIT 1")
    assert mode == [("incremental",)]
    assert rows(resynced, "SELECT count(*) FROM user_groups WHERE group_id = ?", [group_id]) == [(0,)]
    stored = rows(resynced, "SELECT user_id, group_id FROM user_groups ORDER BY user_id, group_order")
    assert stored == [
        (user_id, group) for user_id in sorted(state.users) for group in _group_ids(state.users[user_id])
    ]


def test_a_managers_new_phone_reaches_every_reports_embedded_manager_at_the_next_nightly_run(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    # Before: the reports' updatedOn does not move, so raw kept the old phone until the full refresh.
    manager_id, reports = next(
        (boss, sorted(u for u, m in state.manager_of.items() if m == boss and u != boss))
        for boss in sorted(set(state.manager_of.values()))
        if any(m == boss and u != boss for u, m in state.manager_of.items())
    )
    state.users[manager_id]["mobilePhone"] = "+1 555 0100 28"
    state.users[manager_id]["updatedOn"] = format_timestamp(datetime.now(UTC))
    server.emulator.changed(state, "users")

    sync(resynced)

    for report in reports:
        ((raw,),) = rows(resynced, "SELECT raw FROM users WHERE id = ?", [report])
        assert json.loads(raw)["manager"]["mobilePhone"] == "+1 555 0100 28", report


def _group_ids(user: dict[str, Any]) -> list[str]:
    return [item["groupId"] for item in user["userGroups"]]


def test_history_gains_exactly_one_version_per_changed_record(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    changed = mutate(server, decisionsUpdated=4, usersUpdated=3)

    sync(resynced)
    sync(resynced)  # nothing changed since: no new version

    versions = dict(rows(resynced, "SELECT id, count(*) FROM decisions_history GROUP BY id"))
    assert {d for d, count in versions.items() if count == 2} == set(changed["decisionsUpdated"])
    assert len(versions) == len(state.decisions)
    user_versions = dict(rows(resynced, "SELECT id, count(*) FROM users_history GROUP BY id"))
    assert {u for u, count in user_versions.items() if count == 2} == set(changed["usersUpdated"])
    current = rows(resynced, "SELECT count(*) FROM decisions_history WHERE is_current AND valid_to IS NULL")
    assert current == [(len(state.decisions),)]


def test_full_refresh_marks_vanished_records_deleted_and_asks_only_its_share_of_revision_ids(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    deleted = set(mutate(server, decisionsDeleted=2)["decisionsDeleted"])
    known = dict(rows(resynced, "SELECT parent_kind, count(*) FROM revision_checks GROUP BY ALL"))
    server.emulator.reset_stats()

    sync(resynced, full_refresh=True)

    # Every list read whole, but no revision list of a record that did not change, except the run's share
    # of the re-verification (before: every delegation's and document's again, 618 calls in all).
    calls = requests_by_endpoint(server)
    assert calls["E8"] == len(state.decisions) // 100 + 1
    ((total, rechecked, days),) = rows(
        resynced,
        "SELECT api_calls_total, revisions_rechecked, recheck_days FROM sync_runs ORDER BY finished_at DESC "
        "LIMIT 1",
    )
    assert calls.get("E11", 0) + calls.get("E12", 0) == rechecked > 0
    # The client's own count: each list's pages (100 records a page, the last one short: the lists of the
    # catalog, each as many records as its table holds live), the current user's positions (E9), and at
    # most 1/N of each kind's lists.
    live = [
        rows(resynced, f"SELECT count(*) FROM {name} WHERE NOT is_deleted")[0][0]  # noqa: S608 - catalog names
        for name in PAGED_LISTS
    ]
    pages = sum(records // 100 + 1 for records in live) + 1
    assert total <= pages + sum(math.ceil(count / days) for count in known.values())

    # Soft deletes: the vanished decisions stay, marked deleted after they were last synced, with their
    # authority limits as last seen; the others are the service's.
    assert ids(resynced, "decisions") == set(state.decisions) | deleted
    assert listed_ids(resynced, "decisions") == set(state.decisions)
    marked = rows(
        resynced,
        "SELECT id FROM decisions WHERE is_deleted AND deleted_at > synced_at AND run_id IS NOT NULL",
    )
    assert {row[0] for row in marked} == deleted
    assert deleted <= ids(resynced, "decision_authorities", "decision_id")
    tombstones = rows(resynced, "SELECT id, name FROM decisions_history WHERE is_current AND is_deleted")
    assert {row[0] for row in tombstones} == deleted and all(name for _, name in tombstones)
    mode = rows(resynced, "SELECT mode FROM sync_runs ORDER BY finished_at DESC LIMIT 1")
    assert mode == [("full",)]


def test_staging_lives_beside_the_warehouse_and_a_killed_runs_leftovers_go_at_the_next_start(
    resynced: SyncSettings,
) -> None:
    staging = resynced.warehouse.parent / "staging"
    killed = staging / "killed-run" / DEMO_TENANT_ID
    killed.mkdir(parents=True)
    (killed / "users.parquet").write_bytes(b"personal data of a run that was killed")
    other_tenant = staging / "killed-run" / OTHER_TENANT_ID
    other_tenant.mkdir()

    sync(resynced)

    assert resynced.staging_root == staging
    assert not killed.exists()
    # Another tenant's staging may belong to a run of that tenant still going: only its own sync cleans it.
    assert other_tenant.exists()
    assert [path.name for path in staging.iterdir()] == ["killed-run"]


def test_a_failed_run_leaves_the_data_untouched_and_records_itself(
    server: EmulatorServer, resynced: SyncSettings
) -> None:
    mutate(server, decisionsUpdated=3, delegationsUpdated=3)
    before = _fingerprint(resynced.warehouse)
    set_faults(server, FaultConfig(error_rate=1.0, endpoints=["E11"]))

    failed = run_sync(resynced, expect_success=False)

    assert failed.error is not None and "changelog/revision-ids -> 500" in failed.error
    assert _fingerprint(resynced.warehouse) == before
    (status, error, calls) = rows(
        resynced, "SELECT status, error, api_calls_total FROM sync_runs WHERE run_id = ?", [failed.run_id]
    )[0]
    assert status == "failed" and "ServerError" in error and calls > 0
    set_faults(server, FaultConfig())
    sync(resynced)
    assert rows(resynced, "SELECT status, count(*) FROM sync_runs GROUP BY ALL ORDER BY 1") == [
        ("failed", 1),
        ("succeeded", 2),
    ]


def _fingerprint(path: Path) -> list[tuple[str, Any]]:
    """Every data table's content: everything but the run log, which records failed runs too."""
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_name <> 'sync_runs' ORDER BY 1"
            ).fetchall()
        ]
        return [
            (
                t,
                con.execute(
                    f"SELECT md5(string_agg(CAST(x AS VARCHAR), '|' ORDER BY CAST(x AS VARCHAR))) "  # noqa: S608
                    f'FROM "{t}" x'
                ).fetchone(),
            )
            for t in tables
        ]


def test_an_unknown_field_of_the_service_is_kept_in_raw_json(
    server: EmulatorServer, resynced: SyncSettings
) -> None:
    mutate(server, unknownField="riskScore")  # every record, none of their updated-at stamps

    sync(resynced, full_refresh=True)

    for table in ("decisions", "delegations", "users", "groups"):
        raws = rows(resynced, f"SELECT raw FROM {table}")  # noqa: S608 - fixed names
        assert raws and all(json.loads(raw)["riskScore"]["kind"] == table for (raw,) in raws)


def test_limit_values_that_cannot_be_read_are_kept_and_counted_by_a_warning(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    numeric = next(
        (decision_id, authority)
        for decision_id, decision in sorted(state.decisions.items())
        for authority in decision["decisionAuthorities"]
        if authority["authorityLimitValueType"] == "Currency"
    )
    decision_id, authority = numeric
    authority["authorityLimitValue"] = "about a million"
    state.decisions[decision_id]["updatedAt"] = format_timestamp(datetime.now(UTC))
    server.emulator.changed(state, "decisions", decision_id)

    run = sync(resynced)

    (checks,) = rows(resynced, "SELECT checks FROM sync_runs WHERE run_id = ?", [run.run_id])[0]
    warning = next(c for c in json.loads(checks) if c["check"] == "limit_values_parse")
    assert not warning["passed"]
    assert (
        warning["description"]
        == "1 numeric limit value(s) could not be read as numbers, e.g. 'about a million'"
    )
    kept = rows(
        resynced, "SELECT limit_value, limit_number FROM decision_authorities WHERE id = ?", [authority["id"]]
    )
    assert kept == [("about a million", None)]


def test_user_groups_keep_their_order_and_the_primary_one(
    first_run: SyncSettings, state: TenantState
) -> None:
    stored: dict[str, list[tuple[Any, ...]]] = {}
    for user_id, *item in rows(
        first_run, "SELECT user_id, group_id, group_order, is_primary FROM user_groups ORDER BY 1, 3"
    ):
        stored.setdefault(user_id, []).append(tuple(item))
    for user_id, user in state.users.items():
        expected = [(item["groupId"], order, order == 1) for order, item in enumerate(user["userGroups"], 1)]
        assert stored.get(user_id, []) == expected, user_id


def test_a_user_whose_status_is_deleted_is_deleted(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    user_id = sorted(state.users)[0]
    stamp = format_timestamp(datetime.now(UTC))
    state.users[user_id].update(status="DELETED", isDeleted=False, updatedOn=stamp)
    server.emulator.changed(state, "users", user_id)

    sync(resynced)

    assert rows(resynced, "SELECT is_deleted, status FROM users WHERE id = ?", [user_id]) == [
        (True, "DELETED")
    ]
    assert rows(resynced, "SELECT count(*) FROM users WHERE is_deleted") == [(1,)]


def test_raw_holds_the_record_as_the_service_sent_it(first_run: SyncSettings, state: TenantState) -> None:
    for table, kind in (("decisions", render.decision), ("users", render.user), ("groups", render.group)):
        record_id = sorted(getattr(state, table))[0]
        (raw,) = rows(first_run, f"SELECT raw FROM {table} WHERE id = ?", [record_id])[0]  # noqa: S608
        assert raw == orjson.dumps(kind(state, record_id)).decode(), table


def test_an_ignored_updated_filter_falls_back_to_a_full_read(
    server: EmulatorServer, resynced: SyncSettings, state: TenantState
) -> None:
    deleted = set(mutate(server, decisionsDeleted=1, decisionsUpdated=2)["decisionsDeleted"])
    set_faults(server, FaultConfig(ignore_params=["updatedAtStart"]))

    sync(resynced)

    (warnings,) = rows(resynced, "SELECT warnings FROM sync_runs ORDER BY finished_at DESC LIMIT 1")[0]
    assert any("ignored the updated-at filter" in warning for warning in json.loads(warnings))
    assert listed_ids(resynced, "decisions") == set(state.decisions)
    assert not deleted & listed_ids(resynced, "decisions")


def test_the_seeded_org_chart_is_one_tree(first_run: SyncSettings) -> None:
    # The seeded org chart is one tree: every live user's chain reaches the one top, who manages themself.
    tops = rows(
        first_run, "SELECT chain_end, top_id, management_chain[1], count(*) FROM v_org_chart GROUP BY ALL"
    )
    (top_id,) = rows(first_run, "SELECT id FROM users WHERE manager_id = id")[0]
    assert tops == [("top", top_id, "Integration Admin", rows(first_run, "SELECT count(*) FROM users")[0][0])]


def test_tenant_partitions_fail_independently(settings: SyncSettings) -> None:
    """The demo credentials cannot read the second tenant: that partition fails alone, and says so."""
    other = run_sync(settings, OTHER_TENANT_ID, expect_success=False)
    sync(settings)

    assert other.error is not None and "403" in other.error
    assert rows(settings, "SELECT DISTINCT tenant_id FROM decisions") == [(DEMO_TENANT_ID,)]
    assert rows(settings, "SELECT tenant_id, status FROM sync_runs ORDER BY finished_at") == [
        (OTHER_TENANT_ID, "failed"),
        (DEMO_TENANT_ID, "succeeded"),
    ]


def test_a_total_that_overcounts_a_list_read_twice_to_its_end_fails_the_run_naming_the_list(
    server: EmulatorServer, settings: SyncSettings
) -> None:
    """A service whose totals are 3 too high: every list is read to a short last page twice, listing the
    same records both times, so the set is known to be short of what the service says it holds: the run
    fails naming the list, its total and the ids read, and commits nothing (before: it committed with a
    warning)."""
    set_faults(server, FaultConfig(total_skew=3))

    run = run_sync(settings, full_refresh=True, expect_success=False)

    assert not run.success and run.error is not None
    assert re.search(r"read to its end twice, .* \((\d+) ids read\) but its total says (\d+)", run.error)
    assert rows(settings, "SELECT count(*) FROM decisions") == [(0,)]


def test_a_full_run_with_inserts_while_it_pages_loads_the_lists_as_they_end(
    server: EmulatorServer, settings: SyncSettings, state: TenantState
) -> None:
    """Every third list request inserts a decision or delegation (and updates another) before it is
    answered: the run reads each list to its end as it is when the read finishes, and its check says the
    list drifted."""
    set_faults(server, FaultConfig(drift_every=3))
    at_start = len(state.decisions)

    run = sync(settings, full_refresh=True)

    set_faults(server, FaultConfig())
    assert len(state.decisions) > at_start
    assert listed_ids(settings, "decisions") == set(state.decisions)
    assert listed_ids(settings, "delegations") == set(state.delegations)
    (checks,) = rows(settings, "SELECT checks FROM sync_runs WHERE run_id = ?", [run.run_id])[0]
    decisions = next(c for c in json.loads(checks) if c["table"] == "decisions" and c["passed"])
    total = len(state.decisions)
    found = re.fullmatch(
        rf"staged {total}, service total {total} \(the list changed while it was read: page 1 said (\d+)\)",
        decisions["description"],
    )
    assert found is not None, decisions["description"]
    assert at_start <= int(found.group(1)) < total
