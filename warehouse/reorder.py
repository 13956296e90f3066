"""Child rows put back in the service's order after migration 0013, from their parent's ``raw``.

Migration 0013 keyed child rows (a decision's groups, limits and documents, a user's roles, positions and
groups, a group's parent links) by their place in the parent's list; the rows it found got their place by
id order, as SQL cannot read the record contract. The next sync stages them in the service's order, so
every reordered row compared as "updated" with nothing changed. `warehouse upgrade` therefore writes
every child row again from its parent's raw, through the same record contract and flatten functions as
a sync (`warehouse.rehash.flattened`): what the next sync stages is then what is stored.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from warehouse.catalog import LISTS, Child, ListTables
from warehouse.rehash import flattened
from warehouse.rows import TableRows
from warehouse.schema import row_digest, staging_schema

CHILD_KEYS = 13
"""The migration that keyed child rows by their place: an upgrade through it rewrites them."""

Batch = list[tuple[str, TableRows]]
"""Records flattened, each with its tenant."""


def reorder_children(con: duckdb.DuckDBPyConnection) -> int:
    """Write every child row of each stored record again from its raw, inside the caller's transaction;
    returns the records whose children were written. A record whose raw no longer reads keeps its rows."""
    lists = [entry for entry in LISTS.values() if entry.children]
    return sum(_reorder_list(con, entry) for entry in lists)


def _reorder_list(con: duckdb.DuckDBPyConnection, entry: ListTables) -> int:
    written = 0
    # Read whole before writing: a write on the connection would end the read's open result.
    for batch in list(flattened(con, entry)):
        for child in entry.children:
            _rewrite(con, entry.name, child, batch)
        written += len(batch)
    return written


def _rewrite(con: duckdb.DuckDBPyConnection, root: str, child: Child, batch: Batch) -> None:
    """Replace the child rows of the batch's records by their flattened rows, stamped with the sync that
    wrote their parent."""
    parents = pa.Table.from_pylist(
        [{"tenant_id": tenant_id, "id": rows[root][0]["id"]} for tenant_id, rows in batch],
        schema=pa.schema([("tenant_id", pa.string()), ("id", pa.string())]),
    )
    fresh = pa.Table.from_pylist(
        [row for _, rows in batch for row in rows[child.table]], schema=staging_schema(child.table)
    )
    con.register("reordered_parents", parents)
    con.register("reordered_rows", fresh)
    try:
        con.execute(
            f"DELETE FROM {child.table} c USING reordered_parents p "  # noqa: S608 - names from the catalog
            f"WHERE c.tenant_id = p.tenant_id AND c.{child.parent_column} = p.id"
        )
        con.execute(
            f"INSERT INTO {child.table} BY NAME "  # noqa: S608 - names from the catalog
            f"SELECT r.*, {row_digest(child.table, 'r')} AS row_digest, p.synced_at, p.run_id "
            f"FROM reordered_rows r JOIN {root} p "
            f"ON p.tenant_id = r.tenant_id AND p.id = r.{child.parent_column}"
        )
    finally:
        con.unregister("reordered_parents")
        con.unregister("reordered_rows")
