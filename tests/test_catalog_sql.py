"""What the list catalog renders at migrate time (`warehouse.catalog_sql`): every table of the catalog has
its as-of macro and its changes in the change log from its first version, without a hand-written line.

Before, migration 0022 wrote each ``<table>_as_of`` by hand and migration 0042's back-fill named each
history table by hand: a list added to the catalog got neither (a test compared the back-fill with the
catalog, so the addition failed it rather than silently lacking them, and the fix was more hand-listing)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

from warehouse.catalog import FAMILIES
from warehouse.catalog_sql import FINGERPRINT_KEY, apply_catalog, as_of_tables
from warehouse.migrate import migrate

TENANT = "tenant-a"
T1, T2 = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    migrate(con, describe=False)
    return con


def test_every_table_of_the_catalog_has_its_as_of_macro(con: duckdb.DuckDBPyConnection) -> None:
    macros = {
        row[0]
        for row in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro'"
        ).fetchall()
    }
    staged = {table for family in FAMILIES.values() for table in family.tables}
    assert staged <= set(as_of_tables())
    for table in as_of_tables():
        assert f"{table}_as_of" in macros, table
        # Its columns are its history's, as of the instant, with the commit it is known as of.
        history = [c[0] for c in con.execute(f"DESCRIBE {table}_history").fetchall()]
        con.execute(f"SELECT * FROM {table}_as_of(TIMESTAMPTZ '2026-03-01 00:00:00+00') LIMIT 0")  # noqa: S608
        shown = [c[0] for c in con.description or []]
        kept = [c for c in history if c not in ("is_current", "ended_run_id")]
        assert shown == [*kept, "known_as_of", "known_as_of_run_id"], table


def test_every_table_of_the_catalog_is_in_the_change_log(con: duckdb.DuckDBPyConnection) -> None:
    logged = {row[0] for row in con.execute("SELECT table_name FROM change_log_tables").fetchall()}
    assert {table for family in FAMILIES.values() for table in family.tables} <= logged


def test_a_table_the_change_log_does_not_hold_yet_gets_its_history_back_filled_once() -> None:
    # A positions record with two versions, before the change log held positions (as a list added to the
    # catalog whose migration brings history along would be).
    con = duckdb.connect()
    migrate(con, describe=False)
    version = (
        "INSERT INTO positions_history "
        "(tenant_id, id, position_name, raw, synced_at, valid_from, valid_to, is_current, run_id)"
    )
    con.execute(f"{version} VALUES (?, 'p1', 'Clerk', '{{}}', ?, ?, ?, FALSE, 'r1')", [TENANT, T1, T1, T2])
    con.execute(
        f"{version} VALUES (?, 'p1', 'Chief clerk', '{{}}', ?, ?, NULL, TRUE, 'r2')", [TENANT, T2, T2]
    )
    con.execute("DELETE FROM change_log_tables WHERE table_name = 'positions'")
    con.execute("DELETE FROM warehouse_meta WHERE key = ?", [FINGERPRINT_KEY])

    migrate(con, describe=False)

    changes = con.execute(
        "SELECT entity, id, field, before, after, changed_at, run_id FROM v_changes "
        "WHERE field = 'position_name'"
    ).fetchall()
    assert changes == [("positions", "p1", "position_name", "Clerk", "Chief clerk", T2, "r2")]
    assert con.execute(
        "SELECT count(*) FROM change_log_tables WHERE table_name = 'positions'"
    ).fetchone() == (1,)
    # Applied once: the next migrate (a fingerprint that says so) and a forced apply add nothing.
    before = con.execute("SELECT count(*) FROM change_log").fetchone()
    migrate(con, describe=False)
    con.execute("DELETE FROM warehouse_meta WHERE key = ?", [FINGERPRINT_KEY])
    assert apply_catalog(con)
    assert not apply_catalog(con)
    assert con.execute("SELECT count(*) FROM change_log").fetchone() == before
