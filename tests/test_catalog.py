"""The list catalog (`resources.catalog`, `warehouse.catalog`) is the one place a list is declared: its two
sides agree, every table it names is migrated, described and an asset, every column it names exists, and
each flatten function feeds exactly its list's tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from models.positions import Position
from models.queries import PositionQuery
from models.users import UserPosition
from pipelines.assets import ASSET_PREFIX, TABLES, histories
from pipelines.check_names import CONFORMITY_CHECK
from pipelines.definitions import defs
from resources.catalog import DELEGATIONS, PAGED_LISTS, POSITIONS, USERS, PagedList
from resources.contract_modes import ContractMode, parse_modes
from resources.endpoints import EndpointName
from tests import samples
from warehouse.catalog import (
    CURRENT_USER_POSITIONS,
    LISTS,
    PERSONAL_TABLES,
    REVISIONS,
    STAGED,
    TABLE_GROUPS,
    ListTables,
    check_catalog,
)
from warehouse.described import described_tables
from warehouse.rows import current_user_position_rows, revision_rows
from warehouse.runs import RUNS_TABLE
from warehouse.schema import arrow_schemas, staging_schema

SAMPLES: dict[EndpointName, Callable[[], dict[str, Any]]] = {
    "E8": samples.decision,
    "delegations": samples.delegation,
    "users": samples.user,
    "groups": samples.group,
    "positions": samples.position,
}
"""A record each list endpoint serves, as the service sends it: a list of an endpoint already here (a
second list of GET /settings/v1/groups) needs nothing new; a list of a new endpoint needs its sample."""


def test_each_list_has_its_entry_on_both_sides_in_the_same_order() -> None:
    assert list(LISTS) == list(PAGED_LISTS)
    assert all(LISTS[name].source is paged for name, paged in PAGED_LISTS.items())
    assert {paged.endpoint for paged in PAGED_LISTS.values()} == set(SAMPLES)


def test_a_list_without_its_tables_is_refused_naming_both_files() -> None:
    roles = replace(POSITIONS, name="roles")
    with pytest.raises(TypeError, match=r"resources/catalog\.py and one in warehouse/catalog\.py"):
        check_catalog({**PAGED_LISTS, "roles": roles}, LISTS, REVISIONS.values())
    with pytest.raises(TypeError, match="differ"):
        check_catalog(
            PAGED_LISTS, {**LISTS, "roles": ListTables(roles, LISTS["positions"].flatten, "org")}, ()
        )
    # The same name on both sides, but another entry than the paged list's.
    with pytest.raises(TypeError, match="differ"):
        check_catalog({**PAGED_LISTS, "positions": roles}, LISTS, ())


def test_a_revision_list_owned_by_a_table_its_list_does_not_feed_is_refused() -> None:
    documents = REVISIONS["document_revisions"]
    with pytest.raises(TypeError, match="decision_documents is not a table of the delegations list"):
        check_catalog(PAGED_LISTS, LISTS, [replace(documents, named_by=DELEGATIONS)])
    with pytest.raises(TypeError, match="does not read one record's revisions"):
        check_catalog(PAGED_LISTS, LISTS, [replace(documents, endpoint="E8")])


def test_a_list_whose_cursor_and_query_disagree_or_whose_record_lacks_a_field_is_refused() -> None:
    with pytest.raises(TypeError, match="updated-at cursor needs an updated-at filter"):
        PagedList[Position]("positions", "positions", Position, PositionQuery, updated="updatedOn")
    with pytest.raises(TypeError, match="updated-at cursor needs an updated-at filter"):
        replace(USERS, updated=None)
    with pytest.raises(TypeError, match="User has no field updatedAt"):
        replace(USERS, updated="updatedAt")
    with pytest.raises(TypeError, match="E1 is not a read"):
        replace(USERS, endpoint="E1")


def test_every_table_of_the_catalog_is_migrated_with_its_history_and_described() -> None:
    schemas, described = arrow_schemas(), described_tables()
    histories = [table for tables in STAGED for table in tables.family.tables]
    assert [table for table in TABLE_GROUPS if table not in schemas or table not in described] == []
    assert [table for table in histories if f"{table}_history" not in schemas] == []


def test_every_column_the_catalog_names_is_a_column_of_its_table() -> None:
    named = [
        (child.table, column)
        for tables in STAGED
        for child in tables.family.children
        for column in (child.parent_column, child.reference, child.order_column, *child.content)
    ]
    for revisions in REVISIONS.values():
        family = LISTS[revisions.named_by.name].family
        named += [
            (revisions.table, revisions.parent_column),
            (revisions.owner, revisions.owner_column),
            (revisions.owner, family.parent_column(revisions.owner)),
        ]
    schemas = arrow_schemas()
    assert [(table, column) for table, column in named if column not in schemas[table].names] == []


@pytest.mark.parametrize("name", list(LISTS))
def test_a_flatten_function_feeds_exactly_its_lists_tables_with_their_staged_columns(name: str) -> None:
    entry = LISTS[name]
    record = entry.source.record.model_validate(SAMPLES[entry.source.endpoint]())

    rows = entry.flatten(samples.TENANT, record)

    assert tuple(rows) == entry.family.tables
    assert all(rows[table] for table in rows)  # the sample feeds every table, so each row is compared
    for table, table_rows in rows.items():
        assert [set(row) for row in table_rows] == [set(staging_schema(table).names)] * len(table_rows)


def test_the_one_call_and_revision_lists_rows_have_their_tables_staged_columns() -> None:
    link = UserPosition.model_validate(samples.user_position())
    (table,) = CURRENT_USER_POSITIONS.family.tables
    (row,) = current_user_position_rows(samples.TENANT, link)[table]
    assert set(row) == set(staging_schema(table).names)
    for revisions in REVISIONS.values():
        (row,) = revision_rows(samples.TENANT, revisions.parent_column, "parent", ["revision"])
        assert set(row) == set(staging_schema(revisions.table).names)


def test_every_table_of_the_catalog_is_an_asset_of_its_group_tagged_when_personal() -> None:
    specs = {spec.key.path[-1]: spec for spec in defs.resolve_all_asset_specs()}
    # A table's history is an asset of the table's group, personal when the table is.
    owners = {**{table: table for table in TABLES}, **histories()}

    assert set(TABLES) == {*TABLE_GROUPS, RUNS_TABLE} and set(TABLES) <= set(specs)
    assert {name: specs[name].group_name for name, table in owners.items() if table in TABLE_GROUPS} == {
        name: f"{ASSET_PREFIX}_{TABLE_GROUPS[table]}"
        for name, table in owners.items()
        if table in TABLE_GROUPS
    }
    personal = {name for name in owners if "pii" in specs[name].tags}
    assert personal == {name for name, table in owners.items() if table in PERSONAL_TABLES}
    # The personal data the catalog flags: the users list's tables and the current user's positions.
    assert {*LISTS[USERS.name].family.tables, *CURRENT_USER_POSITIONS.family.tables} == PERSONAL_TABLES


def test_every_list_has_its_conformity_check_and_its_own_contract_mode() -> None:
    checks = {(key.asset_key.path[-1], key.name) for key in defs.resolve_asset_graph().asset_check_keys}
    for name in PAGED_LISTS:
        assert (name, CONFORMITY_CHECK) in checks
        assert parse_modes(f"tolerant,{name}=strict") == (ContractMode.TOLERANT, {name: ContractMode.STRICT})
