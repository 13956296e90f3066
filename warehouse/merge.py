"""Merge staged tables into the current tables and their SCD2 history.

A *family* is a root table (decisions) and the child tables its records feed (decision_groups, ...). Both
modes replace the staged records and their children; a full merge also marks deleted (soft delete) the
records it did not find, which stay in the current table with their children as last seen. Every
statement runs inside the caller's transaction, so nothing is visible until the caller commits.

Table names come from the fixed registry below, never from input, so building SQL with them is safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from warehouse.schema import staging_schema

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
    root = family.root
    counts = {root: _diff(ctx, root, _root_scope(ctx, root))}
    # Children are replaced only under the staged roots: those of a record that vanished stay as last seen.
    children = [(child, f"{column} IN (SELECT id FROM stg_{root})") for child, column in family.children]
    for child, scope in children:
        if child in staged:
            counts[child] = _diff(ctx, child, scope)
            _replace(ctx, child, scope)
    _replace_roots(ctx, root)
    if ctx.full:
        _soft_delete_vanished(ctx, root)
    if family.history:
        _record_history(ctx, family)
    return counts


def merge_revisions(ctx: MergeContext, table: str) -> Counts:
    """Replace the revision lists of the parents staged, keeping when each revision id was first seen."""
    parent_column, _ = REVISIONS[table]
    scope = f"{parent_column} IN (SELECT {parent_column} FROM stg_{table})"
    counts = _diff(ctx, table, scope, compare=("revision_id",))
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE rev_{table} AS "
        f"SELECT s.* EXCLUDE (first_seen_at), coalesce(c.first_seen_at, ?) AS first_seen_at, "
        f"?::TIMESTAMPTZ AS synced_at, ? AS run_id "
        f"FROM stg_{table} s LEFT JOIN {table} c "
        f"ON c.tenant_id = s.tenant_id AND c.{parent_column} = s.{parent_column} "
        f"AND c.revision_id = s.revision_id",
        [ctx.now, ctx.now, ctx.run_id],
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


def _root_scope(ctx: MergeContext, root: str) -> str:
    """The root rows a merge compares with the staged ones: those staged, and with a full refresh also every
    record not yet deleted (one the refresh does not find is deleted now; one deleted before stays so)."""
    staged = f"id IN (SELECT id FROM stg_{root})"
    return f"({staged} OR NOT coalesce(is_deleted, FALSE))" if ctx.full else staged


def _diff(ctx: MergeContext, table: str, scope: str, compare: tuple[str, ...] = ("id",)) -> Counts:
    """Inserted, updated, unchanged and deleted rows of ``table`` if the staged rows replace the scope."""
    on = " AND ".join(f"c.{column} = s.{column}" for column in compare)
    same = _SAME.get(table, _SAME_ROW)
    result = ctx.con.execute(
        f"WITH c AS (SELECT {_staged_columns(table)} FROM {table} WHERE tenant_id = ? AND {scope}) "
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


def _staged_columns(table: str) -> str:
    """The select list of a current table's columns a run stages (without those the merge fills), in the
    staged order, so that a current row and a staged one compare as whole rows."""
    return ", ".join(f'"{name}"' for name in staging_schema(table).names)


_SAME_ROW = "CAST(s AS VARCHAR) = CAST(c AS VARCHAR)"
"""Whole-row equality (a table alias is a struct in DuckDB) over the staged columns."""

_SAME = {
    **{
        family.root: "s.content_hash = c.content_hash AND s.is_deleted IS NOT DISTINCT FROM c.is_deleted"
        for family in FAMILIES.values()
        if family.history
    },
    # Revision rows differ in first_seen_at by design; only their place in the list counts as a change.
    **dict.fromkeys(REVISIONS, "s.revision_order = c.revision_order"),
}


def _replace(ctx: MergeContext, table: str, scope: str) -> None:
    """Replace the scope's rows with the staged ones, stamped with this run."""
    ctx.con.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND {scope}", [ctx.tenant_id])
    ctx.con.execute(
        f"INSERT INTO {table} BY NAME SELECT *, ?::TIMESTAMPTZ AS synced_at, ? AS run_id FROM stg_{table}",
        [ctx.now, ctx.run_id],
    )


def _replace_roots(ctx: MergeContext, root: str) -> None:
    """Replace the staged records, stamped with this run; a record the service says is deleted keeps the
    time it was first seen deleted."""
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE deleted_before_{root} AS SELECT id, deleted_at FROM {root} "
        f"WHERE tenant_id = ? AND is_deleted AND deleted_at IS NOT NULL "
        f"AND id IN (SELECT id FROM stg_{root} WHERE is_deleted)",
        [ctx.tenant_id],
    )
    ctx.con.execute(
        f"DELETE FROM {root} WHERE tenant_id = ? AND id IN (SELECT id FROM stg_{root})", [ctx.tenant_id]
    )
    # A plain insert, then a small update: a join in the insert made DuckDB buffer the whole staged table.
    ctx.con.execute(
        f"INSERT INTO {root} BY NAME SELECT *, CASE WHEN is_deleted THEN ?::TIMESTAMPTZ END AS deleted_at, "
        f"?::TIMESTAMPTZ AS synced_at, ? AS run_id FROM stg_{root}",
        [ctx.now, ctx.now, ctx.run_id],
    )
    ctx.con.execute(
        f"UPDATE {root} SET deleted_at = d.deleted_at FROM deleted_before_{root} d "
        f"WHERE {root}.tenant_id = ? AND {root}.id = d.id",
        [ctx.tenant_id],
    )


def _soft_delete_vanished(ctx: MergeContext, root: str) -> None:
    """After a full read, mark deleted the records it did not find. Their synced_at and run_id stay those of
    the run that last saw them, so ``deleted_at > synced_at`` tells a record the service stopped listing."""
    ctx.con.execute(
        f"UPDATE {root} SET is_deleted = TRUE, deleted_at = ? "
        f"WHERE tenant_id = ? AND NOT coalesce(is_deleted, FALSE) AND id NOT IN (SELECT id FROM stg_{root})",
        [ctx.now, ctx.tenant_id],
    )


def _record_history(ctx: MergeContext, family: Family) -> None:
    """A new version, a copy of the current row, for every record whose own content or deleted state
    changed: staged records that differ from their current version, and records deleted now."""
    history, root = family.history, family.root
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE versioned_{root} AS "
        f"SELECT s.id FROM stg_{root} s "
        f"LEFT JOIN {history} h ON h.tenant_id = ? AND h.id = s.id AND h.is_current "
        f"WHERE h.id IS NULL OR h.is_deleted IS DISTINCT FROM s.is_deleted "
        f"OR h.content_hash <> s.content_hash "
        f"UNION "
        f"SELECT h.id FROM {history} h JOIN {root} c ON c.tenant_id = h.tenant_id AND c.id = h.id "
        f"WHERE h.tenant_id = ? AND h.is_current AND NOT coalesce(h.is_deleted, FALSE) AND c.is_deleted",
        [ctx.tenant_id, ctx.tenant_id],
    )
    ctx.con.execute(
        f"UPDATE {history} SET valid_to = ?, is_current = FALSE "
        f"WHERE tenant_id = ? AND is_current AND id IN (SELECT id FROM versioned_{root})",
        [ctx.now, ctx.tenant_id],
    )
    # A version's run_id and synced_at are those of the run that recorded it.
    ctx.con.execute(
        f"INSERT INTO {history} BY NAME SELECT c.* REPLACE (?::TIMESTAMPTZ AS synced_at, ? AS run_id), "
        f"?::TIMESTAMPTZ AS valid_from, NULL::TIMESTAMPTZ AS valid_to, TRUE AS is_current "
        f"FROM {root} c WHERE c.tenant_id = ? AND c.id IN (SELECT id FROM versioned_{root})",
        [ctx.now, ctx.run_id, ctx.now, ctx.tenant_id],
    )
