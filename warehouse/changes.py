"""What a commit records besides the current tables and their record histories, in the commit's own
transaction: the versions of the revision lists (``<revisions>_history``) and the field-level change log
(``change_log``, read through ``v_changes``).

The change log is appended per commit rather than computed per query, so that asking for one record or one
month reads only those rows however long the history grows. Its one definition is the SQL macros
``record_changes``, ``item_changes`` and ``raw_changes`` (migration 0042), one history table each: here
they are asked, for every table of the catalog, for this commit's changes alone (and by
`warehouse.catalog_sql`, for every change the history of a table not logged yet holds). The paths of
``raw`` that a commit changed are compared in batches (``raw_step_changes``, the comparison
``raw_changes`` makes, migration 0050), so that the commit's buffer does not grow with their number.
Table names come from the fixed catalog (`warehouse.catalog`), never from input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime

import duckdb

from warehouse.catalog import FAMILIES, REVISIONS, Child, Family, RevisionList


def record_changes(
    con: duckdb.DuckDBPyConnection,
    tenant_id: str,
    run_id: str,
    now: datetime,
    revisions_changed: Iterable[str] | None = None,
) -> None:
    """Bring the revision histories up to the current lists (those of ``revisions_changed``, the revision
    tables whose lists the commit changed, when given: the others' lists are as their histories hold
    them), then append the changes the commit at ``now`` made to the tenant's histories to ``change_log``
    (inside the caller's transaction, on one of DuckDB's threads)."""
    revised = REVISIONS.keys() if revisions_changed is None else frozenset(revisions_changed)
    for table in revised:
        _record_revision_history(con, REVISIONS[table], tenant_id, run_id, now)
    changed = _changed(con, tenant_id, now)
    if not changed:
        return
    with _one_thread(con):
        for family in FAMILIES.values():
            if family.history in changed:
                fields, _ = root_calls(family, COMMIT)
                _append(con, fields, tenant_id, now)
                _append_raw_paths(con, family, tenant_id, now)
            for child in family.children:
                if child.history in changed:
                    _append(con, item_call(family, child, COMMIT), tenant_id, now)


@contextmanager
def _one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run on one of DuckDB's threads, then give the setting back. The change macros' JSON walks and
    groupings reserve blocks per thread and partition: on two threads a nightly of 20,000 decisions (199
    changed) outgrew the commit's 128 MB buffer here, and the whole commit ran again on one thread (1.3 s
    more); their inputs are only the commit's changes. Not given back after a failure: the commit then
    rolls back and closes the connection."""
    (threads,) = con.execute("SELECT current_setting('threads')").fetchone() or (1,)
    con.execute("SET threads = 1")
    yield
    con.execute(f"SET threads = {int(threads)}")


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


def _changed(con: duckdb.DuckDBPyConnection, tenant_id: str, now: datetime) -> frozenset[str]:
    """The history tables in which the commit at ``now`` changed a record of the tenant, asked in one
    statement: only their change macros run (the planning of one alone costs a tenth of a second, and a
    full refresh's first commit would pay their whole work for nothing).

    A record changed when one of its versions ended at ``now`` (its next version began then); an item
    list also when an item began a version at ``now`` in the list of a record seen before (an item that
    came with its record's first version is no change)."""
    probes: dict[str, list[str]] = {}
    for family in FAMILIES.values():
        probes[family.history] = [_ended(family.history)]
        for child in family.children:
            probes[child.history] = [_ended(child.history), _added(family, child)]
    histories = list(probes)
    columns = ", ".join(" OR ".join(f"EXISTS ({probe})" for probe in probes[name]) for name in histories)
    found = con.execute(f"SELECT {columns}", {"tenant": tenant_id, "now": now}).fetchone()
    return frozenset(name for name, changed in zip(histories, found or (), strict=True) if changed)


def _ended(history: str) -> str:
    """The tenant's versions in ``history`` that ended at ``$now``."""
    return f"SELECT 1 FROM {history} WHERE tenant_id = $tenant AND valid_to = $now"


def _added(family: Family, child: Child) -> str:
    """The tenant's items that began a version at ``$now`` in the list of a record seen before."""
    return (
        f"SELECT 1 FROM {child.history} i WHERE i.tenant_id = $tenant AND i.valid_from = $now "
        f"AND EXISTS (SELECT 1 FROM {family.history} r WHERE r.tenant_id = i.tenant_id "
        f"AND r.id = i.{child.parent_column} AND r.valid_from < $now)"
    )


def _append(con: duckdb.DuckDBPyConnection, call: str, tenant_id: str, now: datetime) -> None:
    """Append the rows of the change macro ``call`` for the tenant's commit at ``now`` to the log. One
    statement per table: one query of every table ran out of a commit's bounded memory."""
    con.execute(f"INSERT INTO change_log SELECT * FROM {call}", [tenant_id, now])


RAW_BATCH_BYTES = 2**20
"""The most bytes of ``raw`` (both versions of each record, the record that crosses the bound included) that
one comparison of a commit reads (`_append_raw_paths`). DuckDB's buffer needs about 35 times as much: of
a tenant of 100,000 decisions, 125 changed decisions (0.9 MB) compared within 48 MB and 250 (1.7 MB) did
not within 64 MB, and all 997 of a nightly run (7 MB) outgrew the commit's 128 MB (docs/benchmarks.md,
session 30)."""


def _append_raw_paths(con: duckdb.DuckDBPyConnection, family: Family, tenant_id: str, now: datetime) -> None:
    """Append the changed paths of ``raw`` of the family root's versions that the commit at ``now`` started
    to the log, comparing them in batches of `RAW_BATCH_BYTES` (``raw_step_changes``, migration 0050): one
    comparison of every changed record at once needs a buffer that grows with their number. The versions
    are read from the history once (the earlier ones are spread over the whole table); the batches are
    cut over their ids and sizes alone."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE commit_raw_steps AS "
        f"SELECT * FROM raw_steps({text_literal(family.history)}, ?, ?)",
        [tenant_id, now],
    )
    con.execute(
        # A record's batch: the bytes of the records before it (by id), in units of the bound.
        "CREATE OR REPLACE TEMP TABLE commit_raw_batches AS "
        "SELECT record_id, CAST(floor(coalesce(sum(size) OVER before_it, 0) / ?) AS BIGINT) AS batch "
        "FROM (SELECT record_id, strlen(CAST(raw AS VARCHAR)) + strlen(CAST(before_raw AS VARCHAR)) AS size "
        "FROM commit_raw_steps) "
        "WINDOW before_it AS (ORDER BY record_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)",
        [RAW_BATCH_BYTES],
    )
    batches = con.execute("SELECT DISTINCT batch FROM commit_raw_batches ORDER BY batch").fetchall()
    for (batch,) in batches:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE commit_raw_batch AS SELECT * FROM commit_raw_steps "
            "WHERE record_id IN (SELECT record_id FROM commit_raw_batches WHERE batch = ?)",
            [batch],
        )
        con.execute(
            "INSERT INTO change_log SELECT * FROM "
            f"raw_step_changes({text_literal(family.root)}, 'commit_raw_batch')"
        )
    con.execute("DROP TABLE IF EXISTS commit_raw_batch")
    con.execute("DROP TABLE commit_raw_batches")
    con.execute("DROP TABLE commit_raw_steps")


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
    # The lists as versions (a CTE of each statement: a temp table cost a statement of its own).
    held = (
        f"WITH held AS (SELECT tenant_id, {parent}, revision_id, CAST(row_number() OVER (PARTITION BY "
        f"{parent}, revision_id ORDER BY revision_order) AS INTEGER) AS occurrence, first_seen_at "
        f"FROM {table} WHERE tenant_id = $tenant) "
    )
    same = f"n.{parent} = h.{parent} AND n.revision_id = h.revision_id AND n.occurrence = h.occurrence"
    arguments = {"tenant": tenant_id, "now": now, "run": run_id}
    con.execute(
        f"{held}UPDATE {history} h SET valid_to = $now, ended_run_id = $run, is_current = FALSE "
        f"WHERE h.tenant_id = $tenant AND h.is_current AND NOT EXISTS (SELECT 1 FROM held n WHERE {same})",
        arguments,
    )
    con.execute(
        f"{held}INSERT INTO {history} BY NAME SELECT n.*, $now::TIMESTAMPTZ AS valid_from, $run AS run_id, "
        f"TRUE AS is_current FROM held n WHERE NOT EXISTS "
        f"(SELECT 1 FROM {history} h WHERE h.tenant_id = $tenant AND h.is_current AND {same})",
        arguments,
    )
