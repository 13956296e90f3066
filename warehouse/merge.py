"""Merge staged tables into the current tables and their SCD2 history.

A *family* is a root table (decisions) and the child tables its records feed (decision_groups, ...). An
incremental merge replaces the staged roots and their children; a full merge replaces the tenant's whole
family and marks roots that disappeared as deleted in history. Every statement runs inside the caller's
transaction, so nothing is visible until the caller commits.

Table names come from the fixed registry below, never from input, so building SQL with them is safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

Counts = dict[str, int]


@dataclass(frozen=True)
class Family:
    """A root table, its child tables (table, parent-id column) and its history table."""

    root: str
    children: tuple[tuple[str, str], ...] = ()
    history: str | None = None


FAMILIES: dict[str, Family] = {
    "decisions": Family(
        "decisions",
        (
            ("decision_groups", "decision_id"),
            ("decision_authorities", "decision_id"),
            ("decision_documents", "decision_id"),
        ),
        "decisions_history",
    ),
    "delegations": Family("delegations", (), "delegations_history"),
    "users": Family(
        "users",
        (("user_roles", "user_id"), ("user_positions", "user_id"), ("user_groups", "user_id")),
        "users_history",
    ),
    "groups": Family("groups", (("group_parents", "group_id"),), "groups_history"),
    "positions": Family("positions"),
    "current_user_positions": Family("current_user_positions"),
}

REVISIONS: dict[str, tuple[str, str]] = {
    "delegation_revisions": ("delegation_id", "delegations"),
    "document_revisions": ("document_id", "decision_documents"),
}
"""Revision tables: their parent-id column and the table whose rows keep a revision list alive."""


@dataclass(frozen=True)
class MergeContext:
    """What every statement of one tenant's commit needs."""

    con: duckdb.DuckDBPyConnection
    tenant_id: str
    run_id: str
    now: datetime
    full: bool


def load_staged(con: duckdb.DuckDBPyConnection, staged: dict[str, Path]) -> None:
    """Staged Parquet files as temp views ``stg_<table>`` (read in place, not copied; they vanish with the
    connection)."""
    for table, path in staged.items():
        literal = str(path).replace("'", "''")
        con.execute(f"CREATE OR REPLACE TEMP VIEW stg_{table} AS SELECT * FROM read_parquet('{literal}')")


def merge_family(ctx: MergeContext, family: Family, staged: set[str]) -> dict[str, Counts]:
    """Merge one family whose root table was staged; returns counts per table."""
    counts = {family.root: _diff(ctx, family.root, _scope(ctx, family.root, "id"))}
    for child, parent_column in family.children:
        if child in staged:
            counts[child] = _diff(ctx, child, _scope(ctx, family.root, parent_column))
    if family.history:
        _record_history(ctx, family)
    for child, parent_column in family.children:
        if child in staged:
            _replace(ctx, child, _scope(ctx, family.root, parent_column))
    _replace(ctx, family.root, _scope(ctx, family.root, "id"))
    return counts


def merge_revisions(ctx: MergeContext, table: str) -> Counts:
    """Replace the revision lists of the parents staged, keeping when each revision id was first seen."""
    parent_column, _ = REVISIONS[table]
    scope = f"{parent_column} IN (SELECT {parent_column} FROM stg_{table})"
    counts = _diff(ctx, table, scope, compare=("revision_id",))
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE rev_{table} AS "
        f"SELECT s.* EXCLUDE (first_seen_at), coalesce(c.first_seen_at, ?) AS first_seen_at "
        f"FROM stg_{table} s LEFT JOIN {table} c "
        f"ON c.tenant_id = s.tenant_id AND c.{parent_column} = s.{parent_column} "
        f"AND c.revision_id = s.revision_id",
        [ctx.now],
    )
    ctx.con.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND {scope}", [ctx.tenant_id])
    ctx.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM rev_{table}")
    return counts


def prune_orphan_revisions(ctx: MergeContext, table: str) -> int:
    """After a full refresh, drop revision lists whose delegation or document no longer exists."""
    parent_column, owner = REVISIONS[table]
    owner_column = "id" if owner == "delegations" else "document_id"
    deleted = ctx.con.execute(
        f"DELETE FROM {table} WHERE tenant_id = ? AND {parent_column} NOT IN "
        f"(SELECT {owner_column} FROM {owner} WHERE tenant_id = ?)",
        [ctx.tenant_id, ctx.tenant_id],
    ).fetchone()
    return int(deleted[0]) if deleted else 0


def _scope(ctx: MergeContext, root: str, column: str) -> str:
    """Which current rows a merge replaces: all of the tenant's (full) or those of the staged roots."""
    return "TRUE" if ctx.full else f"{column} IN (SELECT id FROM stg_{root})"


def _diff(ctx: MergeContext, table: str, scope: str, compare: tuple[str, ...] = ("id",)) -> Counts:
    """Inserted, updated, unchanged and deleted rows of ``table`` if the staged rows replace the scope."""
    on = " AND ".join(f"c.{column} = s.{column}" for column in compare)
    same = _SAME.get(table, _SAME_ROW)
    result = ctx.con.execute(
        f"WITH c AS (SELECT * FROM {table} WHERE tenant_id = ? AND {scope}) "
        f"SELECT count(*) FILTER (WHERE c.tenant_id IS NULL), "
        f"count(*) FILTER (WHERE c.tenant_id IS NOT NULL AND NOT ({same})), "
        f"count(*) FILTER (WHERE c.tenant_id IS NOT NULL AND {same}) "
        f"FROM stg_{table} s LEFT JOIN c ON {on}",
        [ctx.tenant_id],
    ).fetchone()
    gone = ctx.con.execute(
        f"SELECT count(*) FROM {table} c WHERE c.tenant_id = ? AND {scope} AND NOT EXISTS "
        f"(SELECT 1 FROM stg_{table} s WHERE {on})",
        [ctx.tenant_id],
    ).fetchone()
    inserted, updated, unchanged = result if result else (0, 0, 0)
    return {
        "inserted": inserted,
        "updated": updated,
        "unchanged": unchanged,
        "deleted": gone[0] if gone else 0,
    }


_SAME_ROW = "CAST(s AS VARCHAR) = CAST(c AS VARCHAR)"
"""Whole-row equality (a table alias is a struct in DuckDB); staging and current share their columns."""

_SAME = {
    **{family.root: "s.content_hash = c.content_hash" for family in FAMILIES.values() if family.history},
    # Revision rows differ in first_seen_at by design; only their place in the list counts as a change.
    **dict.fromkeys(REVISIONS, "s.revision_order = c.revision_order"),
}


def _replace(ctx: MergeContext, table: str, scope: str) -> None:
    ctx.con.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND {scope}", [ctx.tenant_id])
    ctx.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM stg_{table}")


def _record_history(ctx: MergeContext, family: Family) -> None:
    """New versions for new or changed roots; with a full refresh, deleted versions for vanished ones."""
    history, root = family.history, family.root
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE changed_{root} AS "
        f"SELECT s.id, s.content_hash, s.raw FROM stg_{root} s "
        f"LEFT JOIN {history} h ON h.tenant_id = ? AND h.id = s.id AND h.is_current "
        f"WHERE h.id IS NULL OR h.is_deleted OR h.content_hash <> s.content_hash",
        [ctx.tenant_id],
    )
    _close_versions(ctx, history, f"SELECT id FROM changed_{root}")
    ctx.con.execute(
        f"INSERT INTO {history} SELECT ?, id, content_hash, ?, NULL, TRUE, FALSE, ?, raw FROM changed_{root}",
        [ctx.tenant_id, ctx.now, ctx.run_id],
    )
    if not ctx.full:
        return
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE vanished_{root} AS SELECT id FROM {history} WHERE tenant_id = ? "
        f"AND is_current AND NOT is_deleted AND id NOT IN (SELECT id FROM stg_{root})",
        [ctx.tenant_id],
    )
    _close_versions(ctx, history, f"SELECT id FROM vanished_{root}")
    ctx.con.execute(
        f"INSERT INTO {history} SELECT ?, id, 'deleted', ?, NULL, TRUE, TRUE, ?, NULL FROM vanished_{root}",
        [ctx.tenant_id, ctx.now, ctx.run_id],
    )


def _close_versions(ctx: MergeContext, history: str | None, ids: str) -> None:
    ctx.con.execute(
        f"UPDATE {history} SET valid_to = ?, is_current = FALSE "
        f"WHERE tenant_id = ? AND is_current AND id IN ({ids})",
        [ctx.now, ctx.tenant_id],
    )
