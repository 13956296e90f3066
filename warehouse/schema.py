"""Arrow schemas of the warehouse tables, read from the migrations themselves so that the SQL files stay
the single source of truth for column names and types."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import pyarrow as pa

from warehouse.db import open_database
from warehouse.migrate import migrate


@dataclass(frozen=True)
class _Described:
    schemas: dict[str, pa.Schema]
    keys: dict[str, tuple[str, ...]]


_describing = threading.Lock()
"""The extract's threads all ask at their first staged page: one of them migrates, the others wait for it
(each migrating on its own took seconds of CPU at the start of every run)."""


def _described() -> _Described:
    with _describing:
        return _migrated_in_memory()


@cache
def _migrated_in_memory() -> _Described:
    """Every base table's Arrow schema and primary key, from one in-memory migration a process."""
    with open_database() as con:
        migrate(con, describe=False)
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        schemas = {
            table: con.sql(f'SELECT * FROM "{table}" LIMIT 0').to_arrow_table().schema for table in tables
        }
        keys = con.execute(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    return _Described(schemas, {str(table): tuple(columns) for table, columns in keys})


def arrow_schemas() -> dict[str, pa.Schema]:
    """Every base table's Arrow schema, by table name."""
    return _described().schemas


def primary_keys() -> dict[str, tuple[str, ...]]:
    """Every base table's primary-key columns, by table name (tables without one are left out)."""
    return _described().keys


MERGE_COLUMNS = ("deleted_at", "synced_at", "run_id")
"""Columns the merge fills (when a record was first seen deleted, by which run it was last written): the
extract never stages them."""


def arrow_schema(table: str) -> pa.Schema:
    """One table's Arrow schema."""
    return arrow_schemas()[table]


def staging_schema(table: str) -> pa.Schema:
    """The Arrow schema a run stages ``table`` in: its columns without those the merge fills."""
    schema = arrow_schema(table)
    return pa.schema([column for column in schema if column.name not in MERGE_COLUMNS])
