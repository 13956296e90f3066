"""How ``raw`` (each record's JSON as the service sent it) is stored: with ZSTD in every table that has it
(migration 0047), in a warehouse a sync wrote and in one upgraded from before the migration, rows kept."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.sync_support import query
from warehouse import migrate as migrations
from warehouse.db import open_database
from warehouse.empty import STORAGE_VERSION
from warehouse.migrate import migrate
from warehouse.publish import readable_as
from warehouse.upgrade import FREE_SHARE_REWRITTEN, upgrade

ZSTD = {"declared ZSTD", "stored ZSTD"}


def raw_storage(warehouse: Path) -> dict[str, set[str]]:
    """Each table with a ``raw`` column (found in the catalog, not listed here): the compression its column
    declares (``declared``, or ``DuckDB's choice``) and those of the segments it has stored (``stored``),
    for the migration that stores raw with ZSTD (0047)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = con.execute(
            "SELECT t.table_name, t.sql FROM duckdb_tables() t JOIN duckdb_columns() c "
            "USING (database_name, schema_name, table_name) WHERE c.column_name = 'raw'"
        ).fetchall()
        found: dict[str, set[str]] = {}
        for table, sql in tables:
            stored = con.execute(
                "SELECT DISTINCT compression FROM pragma_storage_info(?) "
                "WHERE column_name = 'raw' AND segment_type <> 'VALIDITY'",
                [table],
            ).fetchall()
            declared = "ZSTD" if "raw JSON USING COMPRESSION ZSTD" in sql else "DuckDB's choice"
            found[table] = {f"declared {declared}", *(f"stored {row[0]}" for row in stored)}
    return found


def test_a_synced_warehouse_stores_every_raw_column_with_zstd(synced: Path) -> None:
    storage = raw_storage(synced)

    assert {"decisions", "decisions_history", "users", "users_history"} <= set(storage)
    assert {table: found for table, found in storage.items() if found - ZSTD} == {}
    assert storage["decisions"] == storage["users_history"] == ZSTD  # stored, not only declared


def test_an_upgrade_stores_the_raw_it_keeps_with_zstd(
    synced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = migrations.available()
    older = tmp_path / "older.duckdb"
    monkeypatch.setattr(migrations, "available", lambda: tuple(m for m in shipped if m[0] < 47))
    with open_database(older, config={"storage_compatibility_version": STORAGE_VERSION}) as con:
        migrate(con, from_baseline=False)
        con.execute("ATTACH ? AS synced (READ_ONLY)", [str(synced)])
        for table in ("decisions", "users_history"):
            con.execute(f"INSERT INTO {table} SELECT {_STORED} FROM synced.{table}")  # noqa: S608 - fixed
        con.execute("DETACH synced")
        con.execute("CHECKPOINT")
    kept = {table: _rows(older, table) for table in ("decisions", "users_history")}
    assert raw_storage(older)["decisions"] == {"declared DuckDB's choice", "stored DICT_FSST"}
    assert readable_as(older, STORAGE_VERSION)  # so only the freed blocks can make the upgrade rewrite it
    monkeypatch.undo()

    upgraded = upgrade(older, wait_s=0)

    assert upgraded.applied == [version for version, _, _ in shipped if version >= 47]
    # The tables built again left their old blocks free: the file was rewritten to give them back.
    assert upgraded.rewritten.startswith("rewritten to give back ")
    assert _free_share(older) < FREE_SHARE_REWRITTEN
    storage = raw_storage(older)
    assert {table: found for table, found in storage.items() if "declared ZSTD" not in found} == {}
    assert storage["decisions"] == storage["users_history"] == ZSTD
    for table, rows in kept.items():
        assert _rows(older, table) == rows, table
    # Migration 0049 digested each row as the merge digests the row it writes (the synced file's rows).
    digests = "SELECT id, row_digest FROM decisions ORDER BY id"
    assert query(older, digests) == query(synced, digests)


def _rows(warehouse: Path, table: str) -> list[tuple[object, ...]]:
    return query(warehouse, f"SELECT {_STORED} FROM {table} ORDER BY ALL")  # noqa: S608 - the test's names


_STORED = "COLUMNS(lambda c: c <> 'row_digest')"
"""Every column a table had before migration 0049 added the rows' digests."""


def _free_share(warehouse: Path) -> float:
    ((free, total),) = query(warehouse, "SELECT free_blocks, total_blocks FROM pragma_database_size()")
    return float(free / total)
