"""Arrow schemas of the warehouse tables, read from the migrations themselves so that the SQL files stay
the single source of truth for column names and types."""

from __future__ import annotations

from functools import cache

import pyarrow as pa

from warehouse.db import open_database
from warehouse.migrate import migrate


@cache
def arrow_schemas() -> dict[str, pa.Schema]:
    """Every base table's Arrow schema, by table name (built once, in memory)."""
    con = open_database()
    try:
        migrate(con, describe=False)
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        return {
            table: con.sql(f'SELECT * FROM "{table}" LIMIT 0').to_arrow_table().schema for table in tables
        }
    finally:
        con.close()


@cache
def primary_keys() -> dict[str, tuple[str, ...]]:
    """Every base table's primary-key columns, by table name (tables without one are left out)."""
    with open_database() as con:
        migrate(con, describe=False)
        rows = con.execute(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    return {str(table): tuple(columns) for table, columns in rows}


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
