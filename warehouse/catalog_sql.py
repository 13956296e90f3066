"""What the list catalog renders into the warehouse at migrate time: each table's as-of macro, and the
change log's back-fill of a table it does not log yet.

The SQL migrations hold the tables and what every table shares (``history_as_of``, migration 0041; the
change macros, migration 0042). What exists once per table is rendered here from `warehouse.catalog`, so a
list added to the catalog gets its ``<table>_as_of`` macros and its whole history in ``v_changes`` without
a hand-written line:

- ``<table>_as_of(ts)``, the table as it was at ``ts`` (``history_as_of`` over ``<table>_history``), for
  every table a sync stages and every revision list (created where missing: the tables of migrations
  0022 and 0043 have theirs already, with this very definition);
- a table of the catalog that ``change_log_tables`` (migration 0044) does not hold yet has every change its
  history holds appended to ``change_log`` (the changes a commit appends, `warehouse.changes`, with tenant
  and instant NULL), then is recorded there: from then on each commit appends its changes.

`warehouse.migrate.migrate` applies it after the migrations, in one transaction, when the rendered SQL
differs from what the warehouse last applied (its fingerprint is in ``warehouse_meta``): one small read on
every other connection. Table names come from the fixed catalog, never from input.
"""

from __future__ import annotations

import hashlib

import duckdb

from warehouse.catalog import FAMILIES, REVISIONS, Family
from warehouse.changes import EVERY_CHANGE, item_call, root_calls, text_literal
from warehouse.meta import meta_value, set_meta

FINGERPRINT_KEY = "catalog_sql"
"""The ``warehouse_meta`` key of the fingerprint of the catalog's SQL last applied."""


def as_of_tables() -> tuple[str, ...]:
    """Every table with a history that an as-of macro shows: the staged families' and the revision lists'."""
    return (*(table for family in FAMILIES.values() for table in family.tables), *REVISIONS)


def as_of_statements() -> dict[str, str]:
    """``CREATE OR REPLACE MACRO <table>_as_of(ts)`` of every table of `as_of_tables`, by macro name."""
    return {
        f"{table}_as_of": f"CREATE OR REPLACE MACRO {table}_as_of(ts) AS TABLE "
        f"SELECT * FROM history_as_of({text_literal(f'{table}_history')}, ts)"
        for table in as_of_tables()
    }


def backfill_calls(family: Family) -> dict[str, tuple[str, ...]]:
    """Per table of ``family``, the change macro calls that give every change its history holds."""
    return {
        family.root: root_calls(family, EVERY_CHANGE),
        **{child.table: (item_call(family, child, EVERY_CHANGE),) for child in family.children},
    }


def fingerprint() -> str:
    """A hash of everything this module renders (a new table, a changed definition: a new fingerprint)."""
    calls = [call for family in FAMILIES.values() for c in backfill_calls(family).values() for call in c]
    text = "\n".join([*as_of_statements().values(), *calls])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def apply_catalog(con: duckdb.DuckDBPyConnection) -> bool:
    """Render the catalog's macros and back-fill the change log of the tables it does not log yet, in one
    transaction, unless done already for this catalog. Returns whether it applied.
    A schema stopped before the migration that keeps the change log's tables (a release's own older
    migrations only, as an upgrade test builds) has nothing to render on yet: it is left alone."""
    wanted = fingerprint()
    if _applied(con) == wanted:  # every connection asks: the answer is one small read
        return False
    ready = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'change_log_tables' AND NOT temporary"
    ).fetchone()
    if not ready or not ready[0]:
        return False
    con.begin()
    try:
        _create_as_of_macros(con)
        _backfill(con)
        set_meta(con, FINGERPRINT_KEY, wanted)
        con.commit()
    except duckdb.Error:
        con.rollback()
        raise
    return True


def _applied(con: duckdb.DuckDBPyConnection) -> str | None:
    """The fingerprint of the catalog last rendered into the warehouse; None when none was, or the schema
    is older than the table that keeps it (asking the catalog first costs more than the failed read)."""
    try:
        return meta_value(con, FINGERPRINT_KEY)
    except duckdb.CatalogException:
        return None


def _create_as_of_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create the as-of macros the warehouse lacks. Those it has say the same (a migration wrote them, or
    this step: their one definition is `as_of_statements`), and each statement writes the catalog of the
    database, about 30 ms on a busy machine."""
    found = con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro' AND NOT internal"
    ).fetchall()
    existing = {row[0] for row in found}
    for name, statement in as_of_statements().items():
        if name not in existing:
            con.execute(statement)


def _backfill(con: duckdb.DuckDBPyConnection) -> None:
    """Append to the change log every change the history of each table not logged yet holds."""
    logged = {row[0] for row in con.execute("SELECT table_name FROM change_log_tables").fetchall()}
    for family in FAMILIES.values():
        for table, calls in backfill_calls(family).items():
            if table in logged:
                continue
            for call in calls:
                con.execute(f"INSERT INTO change_log SELECT * FROM {call}")
            con.execute("INSERT INTO change_log_tables (table_name) VALUES (?)", [table])
