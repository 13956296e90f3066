"""The script a new warehouse is built from (``warehouse/baseline.sql``): rendered from this tree, and a
warehouse built from it is the one the migrations, the catalog and the dictionary build, object by object,
comment by comment and row by row; a migration shipped after it is applied on top. The empty warehouse
shipped beside it (`warehouse.empty`) is what the script builds, and a new warehouse is a copy of it
stamped with the moment it was made."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from warehouse import baseline, empty
from warehouse import migrate as migrations
from warehouse.commit import connect
from warehouse.db import open_database
from warehouse.digest_scheme import SCHEME_KEY, scheme
from warehouse.migrate import migrate

_CATALOG = {
    "tables": "SELECT table_name, sql, comment, has_primary_key, estimated_size FROM duckdb_tables() "
    "WHERE NOT temporary",
    "columns": "SELECT table_name, column_name, column_index, data_type, column_default, is_nullable, "
    "comment FROM duckdb_columns() WHERE NOT internal",
    "constraints": "SELECT table_name, constraint_type, constraint_text, expression, constraint_column_names "
    "FROM duckdb_constraints()",
    "views": "SELECT view_name, sql, comment FROM duckdb_views() WHERE NOT internal",
    "macros": "SELECT function_name, function_type, parameters, parameter_types, macro_definition, comment "
    "FROM duckdb_functions() WHERE NOT internal",
    "indexes": "SELECT index_name, table_name, sql FROM duckdb_indexes()",
}
"""What the catalog says about each kind of object, as compared between the two warehouses."""


def _catalog(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        kind: sorted((tuple(map(_excluded_sorted, row)) for row in con.execute(query).fetchall()), key=repr)
        for kind, query in _CATALOG.items()
    }


def _excluded_sorted(value: object) -> object:
    """A macro's text with the names of each ``EXCLUDE (...)`` in order: DuckDB keeps them as a set, and
    writes the same macro's set in another order once its text is parsed again."""
    if not isinstance(value, str):
        return value
    return re.sub(
        r"EXCLUDE \(([^()]*)\)", lambda m: f"EXCLUDE ({', '.join(sorted(m[1].split(', ')))})", value
    )


def _rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, each instant as ``"an instant"``: each file is stamped as it is built."""
    tables = [
        row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
    ]
    return {
        table: sorted(
            (tuple("an instant" if hasattr(value, "tzinfo") else value for value in row) for row in rows),
            key=repr,
        )
        for table in tables
        if (rows := con.execute(f'SELECT * FROM "{table}"').fetchall())  # noqa: S608 - the catalog's names
    }


def _built(path: Path, from_baseline: bool) -> tuple[list[int], dict[str, Any], dict[str, Any]]:
    with open_database(path) as con:
        applied = migrate(con, from_baseline=from_baseline)
        return applied, _catalog(con), _rows(con)


def test_the_baseline_is_rendered_from_this_tree() -> None:
    assert baseline.SCRIPT.read_text(encoding="utf-8") == baseline.render(), (
        "warehouse/baseline.sql differs from the migrations, catalog and dictionary: run `make dictionary`"
    )


def test_a_warehouse_built_from_the_baseline_is_the_one_the_migrations_build(tmp_path: Path) -> None:
    built, built_catalog, built_rows = _built(tmp_path / "baseline.duckdb", from_baseline=True)
    replayed, replayed_catalog, replayed_rows = _built(tmp_path / "replayed.duckdb", from_baseline=False)

    assert built == [], "the new file was not built from the baseline"
    assert replayed == [version for version, _, _ in migrations.available()]
    for kind, objects in replayed_catalog.items():
        assert built_catalog[kind] == objects, kind
    assert built_rows == replayed_rows
    assert any(comment for *_, comment in built_catalog["columns"]), "no comment was compared"


def test_a_migration_shipped_after_the_baseline_is_applied_on_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = migrations.available()
    later = shipped[-1][0] + 1
    added = (later, "later", "CREATE TABLE added_later (x INTEGER)")
    monkeypatch.setattr(migrations, "available", lambda: (*shipped, added))

    with open_database(tmp_path / "warehouse.duckdb") as con:
        assert migrate(con) == [later]
        assert con.execute("SELECT count(*) FROM added_later").fetchall() == [(0,)]
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchall() == [(later,)]


def _opened_read_only(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    with open_database(path, read_only=True) as con:
        return _catalog(con), _rows(con)


def test_the_shipped_empty_warehouse_is_the_one_the_baseline_builds(tmp_path: Path) -> None:
    shipped = empty.shipped()
    assert shipped is not None, "no empty warehouse is shipped for baseline.sql: run `make dictionary`"
    built = tmp_path / "built.duckdb"
    empty.build(built)

    assert _opened_read_only(shipped) == _opened_read_only(built)
    assert sorted(shipped.parent.glob("empty-*.duckdb")) == [shipped], "an empty warehouse of another script"


def _instants(path: Path) -> list[datetime.datetime]:
    """Every instant any row of the file holds."""
    with open_database(path, read_only=True) as con:
        tables = [row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        rows = [row for table in tables for row in con.execute(f'SELECT * FROM "{table}"').fetchall()]  # noqa: S608
    return [value for row in rows for value in row if isinstance(value, datetime.datetime)]


def test_a_new_warehouse_is_the_shipped_one_stamped_when_it_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = empty.shipped()
    assert shipped is not None

    def refused(con: duckdb.DuckDBPyConnection) -> None:
        raise AssertionError("a new warehouse ran the baseline script instead of copying the shipped file")

    monkeypatch.setattr(migrations, "_build_from_baseline", refused)
    before = datetime.datetime.now(datetime.UTC)
    path = tmp_path / "new" / "warehouse.duckdb"
    connect(path).close()
    after = datetime.datetime.now(datetime.UTC)

    catalog, rows = _opened_read_only(path)
    # The one row a copy gains: its stored digests (none yet) follow this process's scheme.
    rows["warehouse_meta"].remove((SCHEME_KEY, scheme(), "an instant"))
    catalog["tables"] = [(*t[:4], t[4] - 1) if t[0] == "warehouse_meta" else t for t in catalog["tables"]]
    assert (catalog, {table: found for table, found in rows.items() if found}) == _opened_read_only(shipped)
    instants = _instants(path)
    assert instants, "the new warehouse holds no instant to check"
    assert all(before <= instant <= after for instant in instants), (before, after, sorted(set(instants)))
    assert all(instant < before for instant in _instants(shipped))
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(item.name for item in path.parent.iterdir()) == ["warehouse.duckdb"], "left beside it"


def test_a_tree_that_ships_no_empty_warehouse_for_its_script_builds_one_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = empty.shipped()
    assert shipped is not None
    monkeypatch.setattr(empty, "shipped", lambda: None)
    before = datetime.datetime.now(datetime.UTC)
    path = tmp_path / "warehouse.duckdb"
    connect(path).close()

    assert _opened_read_only(path) == _opened_read_only(shipped)
    assert all(before <= instant for instant in _instants(path))


def test_a_warehouse_placed_first_is_kept_when_another_is_placed_on_it(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    assert empty.place(path)
    first = (path.stat().st_ino, _instants(path))

    assert empty.place(path)  # as a second process does when the first linked its file in between

    assert (path.stat().st_ino, _instants(path)) == first
    assert sorted(item.name for item in tmp_path.iterdir()) == ["warehouse.duckdb"]
