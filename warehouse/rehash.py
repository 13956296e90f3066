"""Content hashes computed again from ``raw``, when their definition changed (`rows.CONTENT_HASH_SCHEME`).

A record's history gains a version when its content hash changes. If the definition of the hash changes
(which fields count, how references count), every stored hash differs from the one the next run computes,
and history would gain one version of every record for no change at all. So the stored hashes of the
current rows (and of their current history versions) are computed again, from the service's own JSON that
``raw`` keeps, read through the same record contract and flatten functions as a sync, before any run
compares against them. ``warehouse_meta`` remembers the scheme the stored hashes follow.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa

from resources.contract import RecordContract
from warehouse.arrow_batches import arrow_batch
from warehouse.catalog import LISTS, ListTables
from warehouse.meta import meta_value, set_meta
from warehouse.rows import CONTENT_HASH_SCHEME, TableRows
from warehouse.schema import row_digest, staging_schema

SCHEME_KEY = "content_hash_scheme"
BATCH = 1_000
"""Records read and hashed at a time (bounds memory on a large tenant)."""


def hashed_lists() -> list[ListTables]:
    """The lists whose root table keeps a content hash (its raw holds the list's record, and the list's
    flatten function hashes it)."""
    return [entry for entry in LISTS.values() if "content_hash" in staging_schema(entry.name).names]


def stored_scheme(con: duckdb.DuckDBPyConnection) -> int | None:
    """The hash scheme the stored hashes follow, or None when not known (never computed again)."""
    value = meta_value(con, SCHEME_KEY)
    return int(value) if value is not None else None


def rehash_if_stale(con: duckdb.DuckDBPyConnection) -> int:
    """Compute the stored hashes again when they follow another scheme than the current one, inside the
    caller's transaction; returns how many records were hashed (0 when nothing was stale)."""
    if stored_scheme(con) == CONTENT_HASH_SCHEME:
        return 0
    hashed: int = sum(_rehash_table(con, entry) for entry in hashed_lists())
    set_meta(con, SCHEME_KEY, str(CONTENT_HASH_SCHEME))
    return hashed


def _rehash_table(con: duckdb.DuckDBPyConnection, entry: ListTables) -> int:
    table = entry.name
    new = arrow_batch(list(_hashes(con, entry)), _HASH_SCHEMA)
    if not new.num_rows:
        return 0
    con.register("rehashed", new)
    try:
        # The current row's stored digest covers its hash: it is written again with it.
        digest = row_digest(table, "t", content_hash="r.content_hash")
        for target, assigned, current in (
            (table, f", row_digest = {digest}", ""),
            (f"{table}_history", "", " AND t.is_current"),
        ):
            con.execute(
                f"UPDATE {target} t SET content_hash = r.content_hash{assigned} FROM rehashed r "  # noqa: S608
                f"WHERE t.tenant_id = r.tenant_id AND t.id = r.id{current}"
            )
    finally:
        con.unregister("rehashed")
    return int(new.num_rows)


_HASH_SCHEMA = pa.schema([("tenant_id", pa.string()), ("id", pa.string()), ("content_hash", pa.string())])


def _hashes(con: duckdb.DuckDBPyConnection, entry: ListTables) -> Iterator[dict[str, str]]:
    """(tenant, id, hash) of each record of the list's root table whose raw still reads as a record."""
    for batch in flattened(con, entry):
        for tenant_id, rows in batch:
            (row,) = rows[entry.name]
            yield {"tenant_id": tenant_id, "id": row["id"], "content_hash": row["content_hash"]}


def flattened(con: duckdb.DuckDBPyConnection, entry: ListTables) -> Iterator[list[tuple[str, TableRows]]]:
    """The list's stored records whose raw still reads as a record, ``BATCH`` at a time, each with its
    tenant and flattened as a sync flattens it (the root row and its child rows)."""
    table = entry.name
    contract = RecordContract()
    tenants = [row[0] for row in con.execute(f"SELECT DISTINCT tenant_id FROM {table}").fetchall()]  # noqa: S608
    for tenant_id in tenants:
        cursor = con.execute(f"SELECT raw FROM {table} WHERE tenant_id = ? ORDER BY id", [tenant_id])  # noqa: S608
        while batch := cursor.fetchmany(BATCH):
            records = _records(contract, entry, [str(row[0]) for row in batch])
            yield [(tenant_id, entry.flatten(tenant_id, record)) for record in records]


def _records(contract: RecordContract, entry: ListTables, raws: list[str]) -> list[Any]:
    """The records ``raws`` hold, read as a page of the service (the same tolerant contract as a sync)."""
    page = {"page": 1, "limit": len(raws), "total": len(raws), "data": "__DATA__"}
    envelope = {"statusCode": 200, "timestamp": "2000-01-01T00:00:00Z", "message": "Success", "data": page}
    body = json.dumps(envelope).replace('"__DATA__"', "[" + ",".join(raws) + "]")
    return list(contract.read_page(entry.source, 1, body.encode("utf-8")).data.data)
