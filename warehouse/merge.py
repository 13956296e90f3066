"""Merge staged tables into the current tables and their SCD2 history.

A *family* is a root table (decisions) and the child tables its records feed (decision_groups, ...). Both
modes replace the staged records and their children; a full merge also marks deleted (soft delete) the
records it did not find, which stay in the current table with their children as last seen. Every
statement runs inside the caller's transaction, so nothing is visible until the caller commits.

A commit costs what changed, not what was read: a staged row equal to its current row in every staged
column is not written again (only its ``synced_at`` and ``run_id`` move to this run, which saw it), so a
full refresh of an unchanged tenant deletes and inserts nothing, and the checkpoint after it writes two
narrow columns instead of every row.

Nor does it pay for rows that are not there: a table that held no row of the tenant when the commit began
(`held_tables`, one statement; a tenant's first run, or a list it never had) is not compared, stamped,
deleted from or its versions ended, statements that could only find nothing (each costs milliseconds to
plan: a small first run's commit sent 140 statements instead of 175, 0.44 s of CPU in them instead of 0.80).

Table names come from the fixed catalog (`warehouse.catalog`), never from input, so building SQL with them
is safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from models.errors import AuthoritySyncError
from warehouse.catalog import FAMILIES, REVISIONS, Child, Family
from warehouse.db import open_database
from warehouse.schema import primary_keys, row_digest, staging_schema

Counts = dict[str, int]


@dataclass(frozen=True)
class MergeContext:
    """What every statement of one tenant's commit needs."""

    con: duckdb.DuckDBPyConnection
    tenant_id: str
    run_id: str
    now: datetime
    full: bool
    vanished: tuple[str, ...] = ()
    """Root ids removed from the service's list while this run read it: marked deleted."""
    held: frozenset[str] | None = None
    """The tables (current and history) that held rows of the tenant when the commit began
    (`held_tables`): in the others, a statement on the tenant's rows as they were finds none. None: not
    asked, every table may hold some."""

    def holds(self, table: str) -> bool:
        """Whether ``table`` may have held rows of the tenant before this commit wrote any."""
        return self.held is None or table in self.held


def held_tables(con: duckdb.DuckDBPyConnection, tenant_id: str, tables: Iterable[str]) -> frozenset[str]:
    """Those of ``tables`` that hold a row of the tenant, in one statement (the merge asks before it writes;
    see `MergeContext.held`)."""
    # Names from the fixed catalog, never from input.
    probes = [f"SELECT '{t}' WHERE EXISTS (SELECT 1 FROM {t} WHERE tenant_id = $tenant)" for t in tables]
    if not probes:
        return frozenset()
    rows = con.execute(" UNION ALL ".join(probes), {"tenant": tenant_id}).fetchall()
    return frozenset(str(row[0]) for row in rows)


def merged_tables(staged: Iterable[str]) -> list[str]:
    """The current and history tables a merge of the ``staged`` tables may write: those `held_tables` is
    asked about."""
    names = set(staged)
    tables = [
        name
        for family in FAMILIES.values()
        if family.root in names
        for table in family.tables
        if table in names
        for name in (table, f"{table}_history")
    ]
    return [*tables, *(table for table in REVISIONS if table in names)]


def load_staged(con: duckdb.DuckDBPyConnection, staged: dict[str, Path], *, copied: bool) -> None:
    """Staged Parquet files as temp tables ``stg_<table>`` (``copied``: the files' rows held in the
    commit's memory) or temp views read in place; either vanishes with the connection. A dozen statements
    of a commit read each staged table, and each that reads a view binds its file again (opens it, reads
    its footer): a small commit copies (`warehouse.commit.SMALL_COMMIT_BELOW`), a larger one keeps its
    bounded buffer for the merge."""
    kind = "TABLE" if copied else "VIEW"
    for table, path in staged.items():
        literal = str(path).replace("'", "''")
        con.execute(f"CREATE OR REPLACE TEMP {kind} stg_{table} AS SELECT * FROM read_parquet('{literal}')")


def merge_family(ctx: MergeContext, family: Family, staged: set[str]) -> dict[str, Counts]:
    """Merge one family whose root table was staged; returns counts per table. A table whose staged rows
    all equal the current ones is only stamped: its replacement and history statements would change
    nothing (most tables of a nightly run, each statement costs milliseconds)."""
    root = family.root
    roots = _diff(ctx, root, _root_scope(ctx, root))
    root_counts, roots_unequal = roots.counts, roots.unequal
    counts = {root: root_counts}
    # Children are replaced only under the staged roots: those of a record that vanished stay as last seen.
    for child in family.children:
        if child.table in staged:
            scope = f"{child.parent_column} IN (SELECT id FROM stg_{root})"
            key = (child.parent_column, child.order_column)
            items = _diff(ctx, child.table, scope, key)
            counts[child.table] = items.counts
            if items.unequal or items.counts["deleted"]:
                _note_differing(ctx, child.table, (*items.unequal_parents, *items.gone_parents), key[0])
                _replace(ctx, child.table, child.parent_column, scope)
                _record_item_history(ctx, child)
            else:
                _stamp_equal(ctx, child.table, child.parent_column, scope, differing=False)
    if roots_unequal:
        # A root the scope holds but the run did not stage is not replaced (a full refresh marks it deleted).
        _note_differing(ctx, root, roots.unequal_parents)
        _replace_roots(ctx, root)
    else:
        _stamp_equal(ctx, root, "id", f"id IN (SELECT id FROM stg_{root})", differing=False)
    # With a full read, the records of the scope that no staged row replaces are those it did not find:
    # marked deleted now. An incremental scope holds only staged records, so it has none.
    gone = root_counts["deleted"]
    if gone:
        _soft_delete_vanished(ctx, root)
    if ctx.vanished:
        _soft_delete(ctx, root, ctx.vanished)
    if roots_unequal or gone or ctx.vanished:  # no new version without a changed or deleted record
        _record_history(ctx, family)
    return counts


def merge_revisions(ctx: MergeContext, table: str, checked: bool) -> Counts:
    """Replace the revision lists of the parents checked in this run (``checked``: the run staged
    ``revision_checks``; an older staging only the parents with revisions), keeping when each revision id
    was first seen. A parent checked with an empty list, or not found, keeps no revisions. Lists that all
    stay as they were are only stamped."""
    parent_column, kind = REVISIONS[table].parent_column, REVISIONS[table].kind
    parents = (
        f"SELECT parent_id FROM stg_revision_checks WHERE parent_kind = '{kind}'"
        if checked
        else f"SELECT {parent_column} FROM stg_{table}"
    )
    scope = f"{parent_column} IN ({parents})"
    counts = _diff(ctx, table, scope, compare=(parent_column, "revision_order")).counts
    if not counts["inserted"] + counts["updated"] + counts["deleted"]:
        # Every list as it was (each id in its place, first seen when it was): only stamped.
        _stamp_equal(ctx, table, parent_column, scope, differing=False)
        return counts
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE rev_{table} AS "
        f"SELECT s.* EXCLUDE (first_seen_at), coalesce(c.first_seen_at, ?) AS first_seen_at, "
        f"?::TIMESTAMPTZ AS synced_at, ? AS run_id "
        f"FROM stg_{table} s LEFT JOIN ("
        f"SELECT {parent_column}, revision_id, min(first_seen_at) AS first_seen_at FROM {table} "
        f"WHERE tenant_id = ? GROUP BY ALL) c "
        f"ON c.{parent_column} = s.{parent_column} AND c.revision_id = s.revision_id",
        [ctx.now, ctx.now, ctx.run_id, ctx.tenant_id],
    )
    if ctx.holds(table):
        ctx.con.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND {scope}", [ctx.tenant_id])
    ctx.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM rev_{table}")
    return counts


def merge_revision_checks(ctx: MergeContext) -> None:
    """Record the latest check of each revision list this run made, stamped with the run."""
    ctx.con.execute(
        "DELETE FROM revision_checks c WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM stg_revision_checks s "
        "WHERE s.parent_kind = c.parent_kind AND s.parent_id = c.parent_id)",
        [ctx.tenant_id],
    )
    ctx.con.execute(
        "INSERT INTO revision_checks BY NAME "
        "SELECT *, ?::TIMESTAMPTZ AS synced_at, ? AS run_id FROM stg_revision_checks",
        [ctx.now, ctx.run_id],
    )


def record_rechecks(ctx: MergeContext) -> tuple[int, int]:
    """Keep this run's re-verifications in ``revision_rechecks``, each with the revision ids it found that
    the warehouse did not hold (run it before `merge_revisions` replaces the lists); returns how many lists
    were re-verified and how many of them held new ids."""
    for table, revisions in REVISIONS.items():
        column = revisions.parent_column
        ctx.con.execute(
            f"INSERT INTO revision_rechecks BY NAME "
            f"SELECT c.tenant_id, c.parent_kind, c.parent_id, c.outcome, c.revisions, "
            f"count(s.revision_id) FILTER (WHERE k.revision_id IS NULL) AS new_revisions, "
            f"? AS run_id, ?::TIMESTAMPTZ AS synced_at "
            f"FROM stg_revision_checks c LEFT JOIN stg_{table} s ON s.{column} = c.parent_id "
            f"LEFT JOIN (SELECT DISTINCT {column}, revision_id FROM {table} WHERE tenant_id = ?) k "
            f"ON k.{column} = s.{column} AND k.revision_id = s.revision_id "
            f"WHERE c.reason = 'recheck' AND c.parent_kind = ? "
            f"GROUP BY c.tenant_id, c.parent_kind, c.parent_id, c.outcome, c.revisions",
            [ctx.run_id, ctx.now, ctx.tenant_id, revisions.kind],
        )
    found = ctx.con.execute(
        "SELECT count(*), count(*) FILTER (WHERE new_revisions > 0) FROM revision_rechecks "
        "WHERE tenant_id = ? AND run_id = ?",
        [ctx.tenant_id, ctx.run_id],
    ).fetchone()
    return (int(found[0]), int(found[1])) if found else (0, 0)


def prune_orphan_revisions(ctx: MergeContext, table: str) -> int:
    """After a full refresh, drop revision lists (and their checks) whose delegation or document no longer
    exists; returns the revision rows dropped."""
    revisions = REVISIONS[table]
    alive = (
        f"SELECT {revisions.owner_column} FROM {revisions.owner} "
        f"WHERE tenant_id = ? AND {revisions.owner_column} IS NOT NULL"
    )
    ctx.con.execute(
        f"DELETE FROM revision_checks WHERE tenant_id = ? AND parent_kind = ? AND parent_id NOT IN ({alive})",
        [ctx.tenant_id, revisions.kind, ctx.tenant_id],
    )
    deleted = ctx.con.execute(
        f"DELETE FROM {table} WHERE tenant_id = ? AND {revisions.parent_column} NOT IN ({alive})",
        [ctx.tenant_id, ctx.tenant_id],
    ).fetchone()
    return int(deleted[0]) if deleted else 0


def _root_scope(ctx: MergeContext, root: str) -> str:
    """The root rows a merge compares with the staged ones: those staged, and with a full refresh also every
    record not yet deleted (one the refresh does not find is deleted now; one deleted before stays so)."""
    staged = f"id IN (SELECT id FROM stg_{root})"
    return f"({staged} OR NOT coalesce(is_deleted, FALSE))" if ctx.full else staged


@dataclass(frozen=True)
class Diff:
    """What replacing a table's scope with its staged rows changes (`_diff`)."""

    counts: Counts
    """Inserted, updated, unchanged and deleted rows."""
    unequal: int
    """Staged rows that are new or differ from their current row in some staged column."""
    unequal_parents: tuple[str, ...] = ()
    """The parents (root ids) of those rows; not asked of a table that held none of the tenant's rows,
    where every staged parent is one."""
    gone_parents: tuple[str, ...] = ()
    """The parents of the scope's rows that no staged row replaces."""


def _diff(ctx: MergeContext, table: str, scope: str, compare: tuple[str, ...] = ("id",)) -> Diff:
    """What replacing the scope of ``table`` with the staged rows changes, in one statement, which is all a
    table of unchanged rows costs: the counts, and the parents whose rows change (few in a nightly run,
    which `_note_differing` keeps without comparing the rows again)."""
    if not ctx.holds(table):  # every staged row is new, and no current row can be gone
        found = ctx.con.execute(f"SELECT count(*) FROM stg_{table}").fetchone()
        inserted = int(found[0]) if found else 0
        return Diff({"inserted": inserted, "updated": 0, "unchanged": 0, "deleted": 0}, inserted)
    compared = _compared(table, scope, compare)
    gone = _gone(table, scope, compare, f"{{'rows': count(*), 'parents': list(DISTINCT c.{compare[0]})}}")
    # MATERIALIZED: inlined, each count's filter cast every row to text again (twice the time).
    result = ctx.con.execute(
        f"WITH compared AS MATERIALIZED ({compared}) "
        f"SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted AND NOT same), "
        f"count(*) FILTER (WHERE NOT inserted AND same), ({gone}), "
        f"count(*) FILTER (WHERE inserted OR NOT equal), "
        f"list(DISTINCT parent) FILTER (WHERE inserted OR NOT equal) FROM compared",
        {"tenant": ctx.tenant_id},
    ).fetchone()
    inserted, updated, unchanged, gone_rows, unequal, parents = result or (0, 0, 0, None, 0, None)
    gone_rows = gone_rows or {"rows": 0, "parents": None}
    return Diff(
        {"inserted": inserted, "updated": updated, "unchanged": unchanged, "deleted": gone_rows["rows"]},
        unequal,
        tuple(parents or ()),
        tuple(gone_rows["parents"] or ()),
    )


def _compared(table: str, scope: str, compare: tuple[str, ...]) -> str:
    """Each staged row of ``table`` beside its current one in the scope (``compare``: the columns that
    pair them, the parent's first): its parent, whether it is new, the same (`_same`) and equal in every
    staged column. The tenant is the parameter ``$tenant``."""
    on = " AND ".join(f"c.{column} = s.{column}" for column in compare)
    stored = "row_digest" if table in DIGESTED else row_digest(table)
    current = (
        f"SELECT {_staged_columns(table)}, {stored} AS row_digest FROM {table} "
        f"WHERE tenant_id = $tenant AND {scope}"
    )
    return (
        f"SELECT s.{compare[0]} AS parent, c.tenant_id IS NULL AS inserted, ({_same(table)}) AS same, "
        f"({_SAME_ROW}) AS equal FROM {_staged_beside(table, current, on)}"
    )


def _staged_beside(table: str, current: str, on: str) -> str:
    """The staged rows of ``table`` (``s``, each with its `row_digest`) left-joined ``on`` the rows of the
    query ``current`` (``c``: the staged columns of current rows and their ``row_digest``). The join
    carries digests, not rows: with the rows themselves (``raw`` included), a second full refresh of 20,000
    unchanged decisions ran out of the commit's 128 MB on two threads and on one."""
    return f"(SELECT *, {row_digest(table)} AS row_digest FROM stg_{table}) s LEFT JOIN ({current}) c ON {on}"


def _gone(table: str, scope: str, compare: tuple[str, ...], what: str) -> str:
    """``what`` of the rows of the scope that no staged row replaces (``c``; the tenant is ``$tenant``)."""
    on = " AND ".join(f"c.{column} = s.{column}" for column in compare)
    return (
        f"SELECT {what} FROM {table} c WHERE c.tenant_id = $tenant AND {scope} "
        f"AND NOT EXISTS (SELECT 1 FROM stg_{table} s WHERE {on})"
    )


def _staged_columns(table: str) -> str:
    """The select list of a current table's columns a run stages (without those the merge fills), in the
    staged order, so that a current row and a staged one compare as whole rows."""
    return ", ".join(f'"{name}"' for name in staging_schema(table).names)


_SAME_ROW = "s.row_digest = c.row_digest"
"""Whole-row equality over the staged columns, by `warehouse.schema.row_digest`."""

DIGESTED = frozenset(table for family in FAMILIES.values() for table in family.tables)
"""The current tables that keep each row's digest (``row_digest``, written with the row): every table a
record feeds. Revision lists are digested when compared (a row is two ids and a place)."""

_ROOTS = frozenset(family.root for family in FAMILIES.values())


def _same(table: str) -> str:
    """How a staged row ``s`` and a current one ``c`` are the same, where not whole-row equality: a record
    with a content hash is the same while its hash and deleted state are."""
    if table in REVISIONS:  # revision rows differ in first_seen_at by design; their place is no change
        return "s.revision_id = c.revision_id"
    if table in _ROOTS and "content_hash" in staging_schema(table).names:
        return "s.content_hash = c.content_hash AND s.is_deleted IS NOT DISTINCT FROM c.is_deleted"
    return _SAME_ROW


def _note_differing(ctx: MergeContext, table: str, parents: Iterable[str], parent: str = "id") -> None:
    """Keep in ``differing_<table>`` the ``parents`` (root ids) whose rows the staged ones change (`Diff`):
    only those parents' rows are written again. In a table that held none of the tenant's rows, every
    staged parent (its ``parent`` column)."""
    if not ctx.holds(table):
        ctx.con.execute(
            f"CREATE OR REPLACE TEMP TABLE differing_{table} AS "
            f"SELECT DISTINCT {parent} AS id FROM stg_{table}"
        )
        return
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP TABLE differing_{table} AS SELECT DISTINCT unnest(?::VARCHAR[]) AS id",
        [list(parents)],
    )


def _stamp_equal(ctx: MergeContext, table: str, parent: str, scope: str, *, differing: bool = True) -> None:
    """Stamp the scope's rows that stay as they are with this run, which saw them: their ``synced_at``
    and ``run_id`` only (an update of two narrow columns, where replacing rewrote every column). Without
    ``differing`` (no ``differing_<table>``: every row of the scope stays), the whole scope."""
    if not ctx.holds(table):
        return
    kept = f"AND {parent} NOT IN (SELECT id FROM differing_{table})" if differing else ""
    ctx.con.execute(
        f"UPDATE {table} SET synced_at = ?, run_id = ? WHERE tenant_id = ? AND {scope} {kept}",
        [ctx.now, ctx.run_id, ctx.tenant_id],
    )


def _replace(ctx: MergeContext, table: str, parent: str, scope: str) -> None:
    """Replace the rows of the parents whose rows differ (`_note_differing`) with the staged ones, stamped
    with this run; the scope's other rows are equal to the staged ones and are only stamped."""
    differing = f"{parent} IN (SELECT id FROM differing_{table})"
    _stamp_equal(ctx, table, parent, scope)
    if ctx.holds(table):
        ctx.con.execute(f"DELETE FROM {table} WHERE tenant_id = ? AND {differing}", [ctx.tenant_id])
    ctx.con.execute(
        f"INSERT INTO {table} BY NAME SELECT *, {row_digest(table)} AS row_digest, "
        f"?::TIMESTAMPTZ AS synced_at, ? AS run_id FROM stg_{table} WHERE {differing}",
        [ctx.now, ctx.run_id],
    )


def _replace_roots(ctx: MergeContext, root: str) -> None:
    """Replace the staged records that differ from their current row, stamped with this run (the others
    are only stamped); a record the service says is deleted keeps the time it was first seen deleted."""
    differing = f"id IN (SELECT id FROM differing_{root})"
    held = ctx.holds(root)  # asked before the insert below writes the table
    if held:
        _stamp_equal(ctx, root, "id", f"id IN (SELECT id FROM stg_{root})")
        ctx.con.execute(
            f"CREATE OR REPLACE TEMP TABLE deleted_before_{root} AS SELECT id, deleted_at FROM {root} "
            f"WHERE tenant_id = ? AND is_deleted AND deleted_at IS NOT NULL "
            f"AND id IN (SELECT id FROM stg_{root} WHERE is_deleted AND {differing})",
            [ctx.tenant_id],
        )
        ctx.con.execute(f"DELETE FROM {root} WHERE tenant_id = ? AND {differing}", [ctx.tenant_id])
    # A plain insert, then a small update: a join in the insert made DuckDB buffer the whole staged table.
    ctx.con.execute(
        f"INSERT INTO {root} BY NAME SELECT *, {row_digest(root)} AS row_digest, "
        f"CASE WHEN is_deleted THEN ?::TIMESTAMPTZ END AS deleted_at, "
        f"?::TIMESTAMPTZ AS synced_at, ? AS run_id FROM stg_{root} WHERE {differing}",
        [ctx.now, ctx.now, ctx.run_id],
    )
    if held:
        ctx.con.execute(
            f"UPDATE {root} SET deleted_at = d.deleted_at FROM deleted_before_{root} d "
            f"WHERE {root}.tenant_id = ? AND {root}.id = d.id",
            [ctx.tenant_id],
        )


def _soft_delete_vanished(ctx: MergeContext, root: str) -> None:
    """After a full read, mark deleted the records it did not find. Their synced_at and run_id stay those of
    the run that last saw them, so ``deleted_at > synced_at`` tells a record the service stopped listing.
    Only called when the comparison (`_diff`) found some: an unchanged tenant's full read marks none."""
    ctx.con.execute(
        f"UPDATE {root} SET {_marked_deleted(root)}, deleted_at = ? "
        f"WHERE tenant_id = ? AND NOT coalesce(is_deleted, FALSE) AND id NOT IN (SELECT id FROM stg_{root})",
        [ctx.now, ctx.tenant_id],
    )


def _soft_delete(ctx: MergeContext, root: str, ids: tuple[str, ...]) -> None:
    """Mark deleted the records the service removed from its list while this run read it."""
    ctx.con.execute(
        f"UPDATE {root} SET {_marked_deleted(root)}, deleted_at = coalesce(deleted_at, ?) "
        f"WHERE tenant_id = ? AND id IN (SELECT unnest(?::VARCHAR[]))",
        [ctx.now, ctx.tenant_id, list(ids)],
    )


def _marked_deleted(root: str) -> str:
    """The assignments of an update that marks records of ``root`` deleted: the flag, and the digest of the
    row it leaves (the next comparison reads the stored digest, not the row)."""
    return f"is_deleted = TRUE, row_digest = {row_digest(root, is_deleted='TRUE')}"


def _record_history(ctx: MergeContext, family: Family) -> None:
    """A new version, a copy of the current row, for every record whose own content or deleted state
    changed: staged records that differ from their current version, and records deleted now."""
    history, root = family.history, family.root
    if ctx.holds(history):
        current = (
            f"SELECT {_staged_columns(root)}, {row_digest(root)} AS row_digest FROM {history} "
            f"WHERE tenant_id = ? AND is_current"
        )
        ctx.con.execute(
            f"CREATE OR REPLACE TEMP TABLE versioned_{root} AS "
            f"SELECT s.id FROM {_staged_beside(root, current, 'c.id = s.id')} "
            f"WHERE c.id IS NULL OR NOT ({_same(root)}) "
            f"UNION "
            f"SELECT h.id FROM {history} h JOIN {root} c ON c.tenant_id = h.tenant_id AND c.id = h.id "
            f"WHERE h.tenant_id = ? AND h.is_current AND NOT coalesce(h.is_deleted, FALSE) AND c.is_deleted",
            [ctx.tenant_id, ctx.tenant_id],
        )
    else:  # no version yet: every staged record starts its first
        ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE versioned_{root} AS SELECT id FROM stg_{root}")
    _end_versions(ctx, history, f"id IN (SELECT id FROM versioned_{root})")
    # A version's run_id and synced_at are those of the run that recorded it. The rows are picked by rowid,
    # found by id first: picked by id, DuckDB read raw of every row of the table before the join dropped
    # all but the versioned ones (a nightly of 100,000 decisions, 997 versioned: 0.42 s; by rowid 0.026 s).
    ctx.con.execute(
        f"INSERT INTO {history} BY NAME "
        f"SELECT c.* EXCLUDE (row_digest) REPLACE (?::TIMESTAMPTZ AS synced_at, ? AS run_id), "
        f"?::TIMESTAMPTZ AS valid_from, TRUE AS is_current "
        f"FROM {root} c WHERE c.rowid IN (SELECT rowid FROM {root} "
        f"WHERE tenant_id = ? AND id IN (SELECT id FROM versioned_{root}))",
        [ctx.now, ctx.run_id, ctx.now, ctx.tenant_id],
    )


def _record_item_history(ctx: MergeContext, child: Child) -> None:
    """Versions of the items of the parents whose rows were just replaced: an item no longer listed, or
    listed with other content, ends its current version; an item listed with no current version of that
    content starts one, a copy of its row. A parent not staged, or staged with every row as it was, keeps
    its items' versions as they were."""
    parents = f"{child.parent_column} IN (SELECT id FROM differing_{child.table})"
    numbered = (
        f"SELECT * EXCLUDE (row_digest), row_number() OVER ("
        f"PARTITION BY {child.parent_column}, {child.reference} ORDER BY {child.order_column}) AS occurrence "
        f"FROM {child.table} WHERE tenant_id = ? AND {parents}"
    )
    if not ctx.holds(child.history):
        # No version of the tenant's items yet (a first commit): each item starts its first, in one
        # statement (the temp table and the comparison below cost two, about 15 ms a child table).
        ctx.con.execute(
            f"INSERT INTO {child.history} BY NAME "
            f"SELECT n.*, ?::TIMESTAMPTZ AS valid_from, TRUE AS is_current FROM ({numbered}) n",
            [ctx.now, ctx.tenant_id],
        )
        return
    ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE items_{child.table} AS {numbered}", [ctx.tenant_id])
    same = " AND ".join(
        f"n.{column} IS NOT DISTINCT FROM h.{column}"
        for column in (child.parent_column, child.reference, "occurrence", *child.content)
    )
    kept = f"EXISTS (SELECT 1 FROM items_{child.table} n WHERE {same})"
    _end_versions(ctx, child.history, f"h.{parents} AND NOT {kept}")
    ctx.con.execute(
        f"INSERT INTO {child.history} BY NAME SELECT n.*, ?::TIMESTAMPTZ AS valid_from, TRUE AS is_current "
        f"FROM items_{child.table} n WHERE NOT EXISTS "
        f"(SELECT 1 FROM {child.history} h WHERE h.tenant_id = ? AND h.is_current AND {same})",
        [ctx.now, ctx.tenant_id],
    )


def _end_versions(ctx: MergeContext, history: str, which: str) -> None:
    """End the current versions ``which`` selects in ``history`` (aliased ``h``): this run's commit is where
    they stop."""
    if not ctx.holds(history):
        return
    ctx.con.execute(
        f"UPDATE {history} h SET valid_to = ?, ended_run_id = ?, is_current = FALSE "
        f"WHERE tenant_id = ? AND is_current AND {which}",
        [ctx.now, ctx.run_id, ctx.tenant_id],
    )


class CommitConstraintError(AuthoritySyncError, RuntimeError):
    """Staged rows broke a key of the warehouse: the commit was rolled back; the message names the table,
    its key and the repeated key values."""


def constraint_failure(staged: dict[str, Path], error: duckdb.Error) -> RuntimeError:
    """The error to raise for ``error`` (a key violation during a merge): it names each staged table whose
    rows repeat a key of its warehouse table, with up to five repeated keys (DuckDB's own message names
    neither table nor record). Reads the staged files on a connection of its own: the commit's transaction
    is aborted by now."""
    found = []
    with open_database() as con:
        for table, path in sorted(staged.items()):
            columns = ", ".join(primary_keys().get(table, ()))
            if not columns:
                continue
            repeated = con.execute(
                f"SELECT {columns}, count(*) FROM read_parquet(?) GROUP BY ALL HAVING count(*) > 1 LIMIT 5",
                [str(path)],
            ).fetchall()
            if repeated:
                keys = "; ".join("(" + ", ".join(map(str, row[:-1])) + f") x{row[-1]}" for row in repeated)
                found.append(f"{table} repeats its key ({columns}): {keys}")
    detail = " | ".join(found) or "no staged table repeats its key"
    return CommitConstraintError(f"a key of the warehouse was broken, nothing committed: {detail} ({error})")
