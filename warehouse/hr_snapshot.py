"""What the HR sync's snapshot reads of the warehouse: a tenant's latest committed sync, the users, groups
and positions the service still lists (as stored), and when the tenant's last HR write was journaled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import duckdb

EVICTED_LIMIT = "1MB"
"""The memory limit `release_cached_pages` briefly sets: what a connection keeps pinned (its metadata)
fits, cached table pages do not."""

# A record the service still lists: "NOT (is_deleted AND deleted_at > synced_at)". One a full read did not
# find is marked deleted after the synced_at of the run that last saw it; a record the service itself says
# is deleted is still listed.


def latest_sync(con: duckdb.DuckDBPyConnection, tenant_id: str) -> tuple[str, datetime, datetime] | None:
    """(run id, started at, finished at) of the tenant's latest successful sync, if any."""
    row = con.execute(
        "SELECT run_id, started_at, finished_at FROM sync_runs WHERE tenant_id = ? AND status = 'succeeded' "
        "ORDER BY finished_at DESC LIMIT 1",
        [tenant_id],
    ).fetchone()
    return (str(row[0]), row[1], row[2]) if row else None


def listed_group_records(con: duckdb.DuckDBPyConnection, tenant_id: str) -> list[str]:
    """The stored JSON of each group the service still lists."""
    rows = con.execute(
        "SELECT raw FROM groups WHERE tenant_id = ? AND NOT (is_deleted AND deleted_at > synced_at)",
        [tenant_id],
    ).fetchall()
    return [str(raw) for (raw,) in rows]


def listed_position_names(con: duckdb.DuckDBPyConnection, tenant_id: str) -> dict[str, str]:
    """Position id -> name, of the named positions the service still lists."""
    rows = con.execute(
        "SELECT id, position_name FROM positions WHERE tenant_id = ? "
        "AND NOT (is_deleted AND deleted_at > synced_at)",
        [tenant_id],
    ).fetchall()
    return {str(key): str(name) for key, name in rows if name}


def listed_user_records(con: duckdb.DuckDBPyConnection, tenant_id: str, batch: int) -> Iterator[list[str]]:
    """The stored JSON of each user the service still lists, ``batch`` records at a time (a large tenant's
    users do not fit in memory at once)."""
    cursor = con.execute(
        "SELECT raw FROM users WHERE tenant_id = ? AND NOT (is_deleted AND deleted_at > synced_at)",
        [tenant_id],
    )
    while rows := cursor.fetchmany(batch):
        yield [str(raw) for (raw,) in rows]


def release_cached_pages(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the pages DuckDB keeps cached after a scan, keeping its memory limit: the snapshot reads each
    user once, yet its pages stay in the buffer (about 70 MB of RSS at 50,000 users, measured) while the
    upload is validated and planned. Lowering the limit to `EVICTED_LIMIT` evicts them; the limit is then
    restored. Best effort: DuckDB refuses (changing nothing) when more than that is pinned."""
    limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    try:
        con.execute(f"SET memory_limit = '{EVICTED_LIMIT}'")
    except duckdb.OutOfMemoryException:
        return
    con.execute(f"SET memory_limit = '{limit}'")


def last_hr_write(con: duckdb.DuckDBPyConnection, tenant_id: str) -> datetime | None:
    """When the tenant's last HR write was journaled (None if there was none)."""
    row = con.execute(
        "SELECT max(e.updated_at) FROM hr_plan_entities e JOIN hr_plans p USING (plan_id) "
        "WHERE p.tenant_id = ? AND e.write_count > 0",
        [tenant_id],
    ).fetchone()
    return row[0] if row else None
