"""What a commit records besides the current tables and their record histories, in the commit's own
transaction: the versions of the revision lists (``<revisions>_history``) and the field-level change log
(``change_log``, read through ``v_changes``).

The change log is appended per commit rather than computed per query, so that asking for one record or one
month reads only those rows however long the history grows. Its one definition is the SQL macros
``record_changes``, ``item_changes`` and ``raw_changes`` (migration 0042), one history table each: here
they are asked, for every table of the catalog, for this commit's changes alone (and by
`warehouse.catalog_sql`, for every change the history of a table not logged yet holds).
Table names come from the fixed catalog (`warehouse.catalog`), never from input.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from warehouse.catalog import FAMILIES, REVISIONS, Child, Family, RevisionList


def record_changes(con: duckdb.DuckDBPyConnection, tenant_id: str, run_id: str, now: datetime) -> None:
    """Bring the revision histories up to the current lists, then append the changes the commit at
    ``now`` made to the tenant's histories to ``change_log`` (inside the caller's transaction)."""
    for revisions in REVISIONS.values():
        _record_revision_history(con, revisions, tenant_id, run_id, now)
    for family in FAMILIES.values():
        if _ended_at(con, family.history, tenant_id, now):
            for call in root_calls(family, COMMIT):
                _append(con, call, tenant_id, now)
        for child in family.children:
            if _ended_at(con, child.history, tenant_id, now) or _added_at(con, family, child, tenant_id, now):
                _append(con, item_call(family, child, COMMIT), tenant_id, now)


COMMIT = "?, ?"
"""The change macros' last two arguments for one commit's changes: its tenant and instant, bound."""
EVERY_CHANGE = "NULL, NULL"
"""... and for every change a history holds."""


def root_calls(family: Family, scope: str) -> tuple[str, str]:
    """The change macro calls of a family's root table, in the order they append (after record_changes:
    a path of raw whose column is logged as changed is left out), ``scope`` their last two arguments."""
    names = f"{text_literal(family.root)}, {text_literal(family.history)}, {scope}"
    return f"record_changes({names})", f"raw_changes({names})"


def item_call(family: Family, child: Child, scope: str) -> str:
    """The change macro call of one child table of ``family``, ``scope`` its last two arguments."""
    names = (child.table, child.history, child.parent_column, child.reference, family.history)
    return f"item_changes({', '.join(map(text_literal, names))}, {scope})"


def _ended_at(con: duckdb.DuckDBPyConnection, history: str, tenant_id: str, now: datetime) -> bool:
    """Whether a version of the tenant in ``history`` ended at ``now``: a record changed then only so (its
    next version began). Cheap looks like this one spare the change macros, whose planning alone costs a
    tenth of a second each, and a full refresh's first commit their whole work."""
    return _exists(
        con, f"SELECT 1 FROM {history} WHERE tenant_id = $tenant AND valid_to = $now", tenant_id, now
    )


def _added_at(
    con: duckdb.DuckDBPyConnection, family: Family, child: Child, tenant_id: str, now: datetime
) -> bool:
    """Whether an item began a version at ``now`` in the list of a record seen before: an item that came
    with its record's first version is no change."""
    return _exists(
        con,
        f"SELECT 1 FROM {child.history} i WHERE i.tenant_id = $tenant AND i.valid_from = $now "
        f"AND EXISTS (SELECT 1 FROM {family.history} r WHERE r.tenant_id = i.tenant_id "
        f"AND r.id = i.{child.parent_column} AND r.valid_from < $now)",
        tenant_id,
        now,
    )


def _exists(con: duckdb.DuckDBPyConnection, rows: str, tenant_id: str, now: datetime) -> bool:
    found = con.execute(f"SELECT EXISTS ({rows})", {"tenant": tenant_id, "now": now}).fetchone()
    return bool(found and found[0])


def _append(con: duckdb.DuckDBPyConnection, call: str, tenant_id: str, now: datetime) -> None:
    """Append the rows of the change macro ``call`` for the tenant's commit at ``now`` to the log. One
    statement per table: one query of every table ran out of a commit's bounded memory."""
    con.execute(f"INSERT INTO change_log SELECT * FROM {call}", [tenant_id, now])


def text_literal(name: str) -> str:
    """A catalog name as an SQL string literal: the macros take table and column names as constants."""
    return "'" + name.replace("'", "''") + "'"


def _record_revision_history(
    con: duckdb.DuckDBPyConnection, revisions: RevisionList, tenant_id: str, run_id: str, now: datetime
) -> None:
    """End the current versions of revision ids no list holds any more (dropped by the service, or with
    their list by a full refresh), and start one for each id a list holds without a current version. A
    version is a revision id in a parent's list; the id's place there is not its content."""
    table, parent = revisions.table, revisions.parent_column
    history = f"{table}_history"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE held_{table} AS SELECT tenant_id, {parent}, revision_id, "
        f"CAST(row_number() OVER (PARTITION BY {parent}, revision_id ORDER BY revision_order) AS INTEGER) "
        f"AS occurrence, first_seen_at FROM {table} WHERE tenant_id = ?",
        [tenant_id],
    )
    same = f"n.{parent} = h.{parent} AND n.revision_id = h.revision_id AND n.occurrence = h.occurrence"
    con.execute(
        f"UPDATE {history} h SET valid_to = ?, ended_run_id = ?, is_current = FALSE "
        f"WHERE h.tenant_id = ? AND h.is_current AND NOT EXISTS (SELECT 1 FROM held_{table} n WHERE {same})",
        [now, run_id, tenant_id],
    )
    con.execute(
        f"INSERT INTO {history} BY NAME SELECT n.*, ?::TIMESTAMPTZ AS valid_from, ? AS run_id, "
        f"TRUE AS is_current FROM held_{table} n WHERE NOT EXISTS "
        f"(SELECT 1 FROM {history} h WHERE h.tenant_id = ? AND h.is_current AND {same})",
        [now, run_id, tenant_id],
    )
