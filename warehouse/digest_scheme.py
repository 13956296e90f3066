"""Stored row digests computed again when this process digests a row otherwise than the one that stored them.

A current row keeps the digest of its staged columns (`warehouse.schema.row_digest`), and the merge writes a
staged row only when its digest differs from the stored one. The digest goes through DuckDB's text of each
value, so a new definition (a staged column added, a value entered otherwise) or a DuckDB that writes some
value's text otherwise (a release of it, an install outside the lock file) would make every stored row look
changed to the next run: written again, and every item row counted as updated, though nothing changed. The
session's time zone did exactly that until instants entered the digest as numbers.

So ``warehouse_meta`` keeps the scheme the stored digests follow (`SCHEME_KEY`): the DuckDB release that
computed them and the digest's definition of every digested table (`scheme`). A commit whose process has
another scheme computes every stored digest that is not its row's again first, inside its transaction
(`redigest_if_stale`), and so does an upgrade. A DuckDB release that writes every value as the last one did
costs one needless pass over the stored rows, never a wrong count.
"""

from __future__ import annotations

import hashlib
from functools import cache

import duckdb

from warehouse.merge import DIGESTED
from warehouse.meta import meta_value, set_meta
from warehouse.schema import row_digest

SCHEME_KEY = "row_digest_scheme"


@cache
def scheme() -> str:
    """This process's digest scheme: a digest of its DuckDB release and of the SQL of every digested
    table's row digest."""
    definitions = "\0".join(f"{table}\0{row_digest(table)}" for table in sorted(DIGESTED))
    return hashlib.sha256(f"{duckdb.__version__}\0{definitions}".encode()).hexdigest()[:32]


def redigest_if_stale(con: duckdb.DuckDBPyConnection) -> int:
    """Compute again every stored digest that is not its row's, when the stored digests follow another
    scheme than this process's (or an unknown one: a warehouse of an earlier release), inside the caller's
    transaction; returns how many rows were digested again."""
    if meta_value(con, SCHEME_KEY) == scheme():
        return 0
    redigested = 0
    for table in sorted(DIGESTED):
        digest = row_digest(table)
        (count,) = con.execute(
            f"UPDATE {table} SET row_digest = {digest} WHERE row_digest IS DISTINCT FROM {digest}"  # noqa: S608
        ).fetchone() or (0,)
        redigested += int(count)
    note_scheme(con)
    return redigested


def note_scheme(con: duckdb.DuckDBPyConnection) -> None:
    """Note that the stored digests follow this process's scheme: once they were all computed again, or in
    a new warehouse, which holds none (its first commit then skips the pass: about 55 ms of statements)."""
    set_meta(con, SCHEME_KEY, scheme())
