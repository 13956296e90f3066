"""The nightly extract end to end: real Dagster runs against the emulator into a real DuckDB file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState
from models.base import format_timestamp
from pipelines.bindings import client_resource
from pipelines.extract import DEFAULT_OVERLAP
from pipelines.runner import TenantRun, embedded_overrides, run_tenant
from resources.dagster_resource import AdmClientResource
from resources.warehouse_resource import WarehouseResource
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, set_faults
from warehouse.examples import EXAMPLES


@pytest.fixture
def warehouse(tmp_path: Path) -> WarehouseResource:
    """A fresh warehouse file and staging folder."""
    return WarehouseResource(path=str(tmp_path / "wh.duckdb"), staging_root=str(tmp_path / "staging"))


@pytest.fixture
def adm(server: EmulatorServer) -> AdmClientResource:
    """The client resource, pointed at the session emulator."""
    return client_resource(**embedded_overrides(server))


@pytest.fixture
def state(emulator: Emulator) -> TenantState:
    """The demo tenant's records as the emulator holds them."""
    return emulator.tenants[DEMO_TENANT_ID]


def sync(adm: AdmClientResource, warehouse: WarehouseResource, full_refresh: bool = False) -> TenantRun:
    """One run of the demo tenant that must succeed."""
    run = run_tenant(DEMO_TENANT_ID, adm, warehouse, full_refresh=full_refresh)
    assert run.success, run.error
    return run


def rows(warehouse: WarehouseResource, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Query the committed warehouse."""
    with duckdb.connect(warehouse.path, read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def ids(warehouse: WarehouseResource, table: str, column: str = "id") -> set[str]:
    """Every value of one column."""
    return {row[0] for row in rows(warehouse, f"SELECT {column} FROM {table}")}  # noqa: S608 - test names


def mutate(server: EmulatorServer, **changes: Any) -> dict[str, list[str]]:
    """Change the service behind the client's back."""
    response = httpx.post(f"{server.base_url}/_admin/mutate", json=changes)
    response.raise_for_status()
    result: dict[str, list[str]] = response.json()
    return result


def requests_by_endpoint(server: EmulatorServer) -> dict[str, int]:
    """What the emulator served since its counters were last reset."""
    counts: dict[str, int] = httpx.get(f"{server.base_url}/_admin/stats").json()["requests"]
    return counts


def nested(state: TenantState, key: str) -> set[str]:
    """Ids of one nested list of every decision."""
    return {item["id"] for decision in state.decisions.values() for item in decision[key]}


def test_full_run_loads_every_record_of_every_table(
    adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)

    assert ids(warehouse, "decisions") == set(state.decisions)
    assert ids(warehouse, "decision_groups") == nested(state, "decisionGroups")
    assert ids(warehouse, "decision_authorities") == nested(state, "decisionAuthorities")
    assert ids(warehouse, "decision_documents") == nested(state, "decisionDocuments")
    assert ids(warehouse, "delegations") == set(state.delegations)
    assert ids(warehouse, "users") == set(state.users)
    assert ids(warehouse, "groups") == set(state.groups)
    assert ids(warehouse, "positions") == set(state.positions)
    assert ids(warehouse, "user_roles") == {r["id"] for u in state.users.values() for r in u["userRoles"]}
    assert ids(warehouse, "user_groups") == {g["id"] for u in state.users.values() for g in u["userGroups"]}
    assert ids(warehouse, "current_user_positions") == {
        p["id"] for p in state.users[state.current_user_id]["userPositions"]
    }


def test_full_run_copies_fields_and_links_faithfully(
    adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)

    for decision_id, name, status, display_id in rows(
        warehouse, "SELECT id, name, status, decision_display_id FROM decisions ORDER BY id LIMIT 50"
    ):
        source = state.decisions[decision_id]
        assert (name, status, display_id) == (source["name"], source["status"], source["decisionDisplayId"])
    managers = dict(rows(warehouse, "SELECT id, manager_id FROM users"))
    assert managers == state.manager_of
    parents = set(rows(warehouse, "SELECT group_id, parent_id FROM group_parents"))
    assert parents == {(g, link.parent_id) for g, links in state.group_parents.items() for link in links}
    cities = dict(rows(warehouse, "SELECT id, address_city FROM groups"))
    assert cities == {g: record["address"]["city"] for g, record in state.groups.items()}


def test_revision_lists_match_the_service_in_order(
    adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)

    delegation_revisions = _lists(
        rows(warehouse, "SELECT delegation_id, revision_id, revision_order FROM delegation_revisions")
    )
    assert delegation_revisions == {
        key: sorted(value, key=int) for key, value in state.delegation_revisions.items()
    }
    referenced = {item["documentId"] for d in state.decisions.values() for item in d["decisionDocuments"]}
    document_revisions = _lists(
        rows(warehouse, "SELECT document_id, revision_id, revision_order FROM document_revisions")
    )
    assert document_revisions == {key: sorted(state.document_revisions[key], key=int) for key in referenced}


def _lists(found: list[tuple[Any, ...]]) -> dict[str, list[str]]:
    grouped: dict[str, list[tuple[int, str]]] = {}
    for parent, revision, order in found:
        grouped.setdefault(parent, []).append((order, revision))
    return {parent: [revision for _, revision in sorted(items)] for parent, items in grouped.items()}


def test_authority_limits_are_parsed_to_numbers(adm: AdmClientResource, warehouse: WarehouseResource) -> None:
    sync(adm, warehouse)

    parsed = rows(
        warehouse, "SELECT limit_value, limit_number, is_unlimited, value_type FROM decision_authorities"
    )
    for value, number, unlimited, value_type in parsed:
        if value == "Unlimited":
            assert unlimited and number is None
        elif value_type == "Authorized":
            assert number is None and not unlimited
        else:
            assert number == float(value)


def test_incremental_run_fetches_only_what_changed(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)
    windows = {
        entity: format_timestamp(cursor - DEFAULT_OVERLAP)
        for entity, cursor in rows(warehouse, "SELECT entity, cursor_value FROM extract_cursors")
    }
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

    sync(adm, warehouse)

    # What the service holds as updated since each cursor (minus the overlap window) is what is read again.
    delegations = {d for d, r in state.delegations.items() if r["updatedAt"] >= windows["delegations"]}
    decisions = {d for d, r in state.decisions.items() if r["updatedAt"] >= windows["decisions"]}
    documents = {item["documentId"] for d in decisions for item in state.decisions[d]["decisionDocuments"]}
    assert set(changed["delegationsUpdated"]) | set(changed["delegationsInserted"]) <= delegations
    assert len(delegations) <= len(state.delegations) // 20
    assert requests_by_endpoint(server) == {
        "E8": 1,
        "delegations": 1,
        "users": 1,
        "groups": 1,
        "positions": 1,
        "E9": 1,
        "E11": len(delegations),
        **({"E12": len(documents)} if documents else {}),
    }
    names = dict(rows(warehouse, "SELECT id, name FROM decisions"))
    assert names == {d: record["name"] for d, record in state.decisions.items()}


def test_history_gains_exactly_one_version_per_changed_record(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)
    changed = mutate(server, decisionsUpdated=4, usersUpdated=3)

    sync(adm, warehouse)
    sync(adm, warehouse)  # nothing changed since: no new version

    versions = dict(rows(warehouse, "SELECT id, count(*) FROM decisions_history GROUP BY id"))
    assert {d for d, count in versions.items() if count == 2} == set(changed["decisionsUpdated"])
    assert len(versions) == len(state.decisions)
    user_versions = dict(rows(warehouse, "SELECT id, count(*) FROM users_history GROUP BY id"))
    assert {u for u, count in user_versions.items() if count == 2} == set(changed["usersUpdated"])
    current = rows(warehouse, "SELECT count(*) FROM decisions_history WHERE is_current AND valid_to IS NULL")
    assert current == [(len(state.decisions),)]


def test_full_refresh_marks_vanished_records_deleted(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)
    deleted = set(mutate(server, decisionsDeleted=2)["decisionsDeleted"])

    sync(adm, warehouse, full_refresh=True)

    assert ids(warehouse, "decisions") == set(state.decisions)
    assert not deleted & ids(warehouse, "decision_authorities", "decision_id")
    tombstones = rows(warehouse, "SELECT id FROM decisions_history WHERE is_current AND is_deleted")
    assert {row[0] for row in tombstones} == deleted
    mode = rows(warehouse, "SELECT mode FROM sync_runs ORDER BY finished_at DESC LIMIT 1")
    assert mode == [("full",)]


def test_failed_run_leaves_the_warehouse_file_untouched(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource
) -> None:
    sync(adm, warehouse)
    mutate(server, decisionsUpdated=3, delegationsUpdated=3)
    before = _fingerprint(Path(warehouse.path))
    set_faults(server, FaultConfig(error_rate=1.0, endpoints=["E11"]))

    failed = run_tenant(DEMO_TENANT_ID, adm, warehouse)

    assert not failed.success
    assert failed.error is not None and "delegation_revisions" in failed.error
    assert _fingerprint(Path(warehouse.path)) == before
    set_faults(server, FaultConfig())
    sync(adm, warehouse)
    assert rows(warehouse, "SELECT count(*) FROM sync_runs") == [(2,)]


def _fingerprint(path: Path) -> tuple[str, list[tuple[Any, ...]]]:
    """The file's bytes and every table's content."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1"
            ).fetchall()
        ]
        content = [
            (
                t,
                con.execute(
                    f"SELECT md5(string_agg(CAST(x AS VARCHAR), '|' ORDER BY CAST(x AS VARCHAR))) "  # noqa: S608
                    f'FROM "{t}" x'
                ).fetchone(),
            )
            for t in tables
        ]
    return digest, content


def test_an_unknown_field_of_the_service_is_kept_in_raw_json(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource
) -> None:
    mutate(server, unknownField="riskScore")

    sync(adm, warehouse)

    for table in ("decisions", "delegations", "users", "groups"):
        raws = rows(warehouse, f"SELECT raw FROM {table}")  # noqa: S608 - fixed names
        assert raws and all(json.loads(raw)["riskScore"]["kind"] == table for (raw,) in raws)


def test_an_ignored_updated_filter_falls_back_to_a_full_read(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource, state: TenantState
) -> None:
    sync(adm, warehouse)
    deleted = set(mutate(server, decisionsDeleted=1, decisionsUpdated=2)["decisionsDeleted"])
    set_faults(server, FaultConfig(ignore_params=["updatedAtStart"]))

    sync(adm, warehouse)

    (warnings,) = rows(warehouse, "SELECT warnings FROM sync_runs ORDER BY finished_at DESC LIMIT 1")[0]
    assert any("ignored the updated-at filter" in warning for warning in json.loads(warnings))
    assert ids(warehouse, "decisions") == set(state.decisions)
    assert not deleted & ids(warehouse, "decisions")


def test_analyst_views_answer_their_example_queries(
    adm: AdmClientResource, warehouse: WarehouseResource
) -> None:
    sync(adm, warehouse)

    for title, sql in EXAMPLES.items():
        assert rows(warehouse, sql), title
    chain = rows(warehouse, "SELECT management_chain FROM v_org_chart ORDER BY levels_below_top DESC LIMIT 1")
    assert chain[0][0][0] == "Integration Admin"


def test_tenant_partitions_fail_independently(adm: AdmClientResource, warehouse: WarehouseResource) -> None:
    """The demo credentials cannot read the second tenant: that partition fails alone."""
    other = run_tenant(OTHER_TENANT_ID, adm, warehouse)
    sync(adm, warehouse)

    assert not other.success
    assert other.error is not None and "403" in other.error
    assert rows(warehouse, "SELECT DISTINCT tenant_id FROM decisions") == [(DEMO_TENANT_ID,)]
    assert rows(warehouse, "SELECT tenant_id FROM sync_runs") == [(DEMO_TENANT_ID,)]


def test_a_failing_blocking_check_stops_the_commit(
    server: EmulatorServer, adm: AdmClientResource, warehouse: WarehouseResource
) -> None:
    """A service whose totals are off: the row-count check fails and nothing is committed."""
    sync(adm, warehouse)
    mutate(server, decisionsUpdated=2)
    before = _fingerprint(Path(warehouse.path))
    set_faults(server, FaultConfig(total_skew=3))

    failed = run_tenant(DEMO_TENANT_ID, adm, warehouse, full_refresh=True)

    assert not failed.success
    assert failed.error is not None and "row_count_matches_service_total" in failed.error
    assert _fingerprint(Path(warehouse.path)) == before
