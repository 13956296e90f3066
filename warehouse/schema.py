"""Arrow schemas and primary keys of the warehouse tables. The migrations are the single source of truth for
column names and types; the schemas a run stages in are read from their generated description
(``described_schema.json``, rendered from the migrated schema by `make dictionary` and held current by
tests/test_dictionary.py), each table's columns typed in one query so that DuckDB itself gives their Arrow
types."""

from __future__ import annotations

import threading
from functools import cache

import pyarrow as pa

from warehouse.db import open_database, quoted
from warehouse.described import DescribedTable, described_tables
from warehouse.migrate import migrate

_describing = threading.Lock()
"""The extract's threads all ask at their first staged page: one of them builds the schemas, the others
wait for it."""


def _schemas() -> dict[str, pa.Schema]:
    with _describing:
        return _described_in_memory()


@cache
def _described_in_memory() -> dict[str, pa.Schema]:
    """Every base table's Arrow schema, once a process: one query whose columns are typed nulls, one a
    table, each a struct of that table's described columns, so that DuckDB gives their Arrow types as it
    gives a table's. About 0.05 s; creating the 47 tables empty and reading each took about 0.15 s (DuckDB
    costs about 0.3 ms a statement), and running every migration in memory about 1 s, which every run paid
    before its first page could be staged."""
    described = described_tables()
    tables = ", ".join(f"NULL::STRUCT({_columns(described[name])}) AS {quoted(name)}" for name in described)
    with open_database() as con:
        typed = con.sql(f"SELECT {tables} LIMIT 0").to_arrow_table().schema
    return {table.name: pa.schema(list(table.type)) for table in typed}


def _columns(described: DescribedTable) -> str:
    """A described table's columns with their types, as a table or a struct declares them."""
    return ", ".join(f"{quoted(column.name)} {column.data_type}" for column in described.columns)


@cache
def _migrated_keys() -> dict[str, tuple[str, ...]]:
    """Every base table's primary key, from one in-memory migration (the description holds no keys; only an
    error report asks for them)."""
    with open_database() as con:
        migrate(con, describe=False)
        keys = con.execute(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    return {str(table): tuple(columns) for table, columns in keys}


def arrow_schemas() -> dict[str, pa.Schema]:
    """Every base table's Arrow schema, by table name."""
    return _schemas()


def primary_keys() -> dict[str, tuple[str, ...]]:
    """Every base table's primary-key columns, by table name (tables without one are left out)."""
    with _describing:
        return _migrated_keys()


MERGE_COLUMNS = ("deleted_at", "synced_at", "run_id", "row_digest")
"""Columns the merge fills (when a record was first seen deleted, by which run it was last written, the
digest of what it staged): the extract never stages them."""


def row_digest(table: str, alias: str = "", **values: str) -> str:
    """SQL of the digest of a row of ``table`` over the columns a run stages, in their staged order: MD5 of
    the row as DuckDB writes it as text, ``raw`` as its own MD5 and each instant as its microseconds since
    the epoch. The columns are those of ``alias`` (none: unqualified); ``values`` puts an SQL expression in
    a column's place (the row as an update leaves it). A current table keeps each row's digest in
    ``row_digest`` (migration 0049), written with the row: comparing a staged row with it reads 32
    characters a row instead of digesting the stored row, ``raw`` and all, again. MD5 here detects change,
    not tampering: a changed row keeps its digest with a chance of 2^-128."""
    prefix = f"{alias}." if alias else ""

    def field(column: pa.Field) -> str:
        value = values.get(column.name, f'{prefix}"{column.name}"')
        # A record's JSON enters as its own MD5: written as text inside the row it would be escaped character
        # by character (20,000 decisions on one thread: 457 ms with it, 325 ms with its MD5).
        if column.name == "raw":
            value = f"md5({value})"
        # An instant's text is written in the session's time zone, which is the process's: digested as
        # text, every stored row with an instant looked changed to a run in another zone.
        elif pa.types.is_timestamp(column.type) and column.type.tz is not None:
            value = f"epoch_us({value})"
        return f'"{column.name}" := {value}'

    fields = ", ".join(field(column) for column in staging_schema(table))
    return f"md5(CAST(struct_pack({fields}) AS VARCHAR))"


def arrow_schema(table: str) -> pa.Schema:
    """One table's Arrow schema."""
    return arrow_schemas()[table]


def staging_schema(table: str) -> pa.Schema:
    """The Arrow schema a run stages ``table`` in: its columns without those the merge fills."""
    schema = arrow_schema(table)
    return pa.schema([column for column in schema if column.name not in MERGE_COLUMNS])
