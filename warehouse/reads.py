"""Read-only looks at the committed warehouse, used while a run is still extracting."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from warehouse.db import open_database
from warehouse.locks import DEFAULT_LOCK_WAIT_S, busy_error

_MAGIC = b"DUCK"
"""What a DuckDB database file holds at bytes 8..12."""


def warehouse_problem(path: Path) -> str | None:
    """Why ``path`` cannot be the warehouse (a folder, a file that is not a DuckDB database, a folder
    path through a file), or None: it is a DuckDB file or can become one."""
    if path.is_dir():
        return f"{path} is a folder, not a DuckDB file"
    if path.is_file():
        with path.open("rb") as file:
            head = file.read(12)
        if len(head) and head[8:12] != _MAGIC:
            return f"{path} is not a DuckDB database file"
        return None
    parent = next((folder for folder in path.parents if folder.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"{parent} is a file, so {path} cannot be created"
    return None


def _locked(error: BaseException) -> bool:
    # Only another process's lock is worth waiting for; "Is a directory" or "not a valid DuckDB
    # database" will not change in a minute.
    return isinstance(error, duckdb.IOException) and "lock" in str(error).lower()


@contextmanager
def read_only(path: Path, wait_s: float = DEFAULT_LOCK_WAIT_S) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A read-only connection, or None when no warehouse exists yet. Waits up to ``wait_s`` while another
    process holds the write lock (a commit of another tenant, say), then raises `LockBusyError` in one
    line naming the holder."""
    if not path.exists():
        yield None
        return
    con = _open(path, wait_s)
    try:
        yield con
    finally:
        con.close()


def _open(path: Path, wait_s: float) -> duckdb.DuckDBPyConnection:
    attempts = Retrying(
        retry=retry_if_exception(_locked),
        stop=stop_after_delay(wait_s),
        wait=wait_exponential(multiplier=0.1, max=2),
        reraise=True,
    )
    try:
        return attempts(open_database, path, read_only=True)
    except duckdb.IOException as error:
        if _locked(error):
            raise busy_error(path, wait_s) from None
        raise


def cursors(path: Path, tenant_id: str) -> dict[str, datetime | None]:
    """The committed extract cursor of each entity of a tenant."""
    with read_only(path) as con:
        if con is None or not table_exists(con, "extract_cursors"):
            return {}
        rows = con.execute(
            "SELECT entity, cursor_value FROM extract_cursors WHERE tenant_id = ?", [tenant_id]
        ).fetchall()
    return {str(entity): value for entity, value in rows}


def column_values(path: Path, tenant_id: str, table: str, column: str) -> set[str]:
    """Distinct values of one column of a committed table, for one tenant."""
    with read_only(path) as con:
        if con is None or not table_exists(con, table):
            return set()
        rows = con.execute(
            f'SELECT DISTINCT "{column}" FROM "{table}" WHERE tenant_id = ?',  # noqa: S608 - fixed names
            [tenant_id],
        ).fetchall()
    return {str(row[0]) for row in rows if row[0] is not None}


def documents_never_pulled(path: Path, tenant_id: str) -> set[str]:
    """Documents referenced by committed decisions whose revision list was never checked."""
    referenced = column_values(path, tenant_id, "decision_documents", "document_id")
    return referenced - checked_parents(path, tenant_id, "document")


def checked_parents(path: Path, tenant_id: str, kind: str) -> set[str]:
    """The delegations or documents (``kind``) whose revision list a committed run checked; a warehouse
    from before ``revision_checks`` knows only those with revisions."""
    with read_only(path) as con:
        if con is None:
            return set()
        if not table_exists(con, "revision_checks"):
            return column_values(path, tenant_id, f"{kind}_revisions", f"{kind}_id")
        rows = con.execute(
            "SELECT parent_id FROM revision_checks WHERE tenant_id = ? AND parent_kind = ?", [tenant_id, kind]
        ).fetchall()
    return {str(row[0]) for row in rows}


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the connected database has ``table``."""
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
    ).fetchone()
    return bool(found and found[0])
