"""The data dictionary (``warehouse/dictionary.toml``): it describes the migrated schema exactly, migrate()
applies it as comments only when it or the schema changed, and docs/data-dictionary.md shows what it says.

When a migration adds a table, view or column, the first two tests name what to describe; when it drops
or renames one, the second names what the dictionary still mentions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from warehouse import dictionary, dictionary_page
from warehouse import migrate as migrations
from warehouse.migrate import migrate
from warehouse.schema import arrow_schemas


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A migrated in-memory warehouse."""
    with duckdb.connect(":memory:") as connection:
        migrate(connection)
        yield connection


def _uncommented(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table, view (``name``) and column (``name.column``) without a comment."""
    found = []
    for name, relation in sorted(dictionary.live_schema(con).items()):
        found += [name] if not relation.comment else []
        found += [f"{name}.{column.name}" for column in relation.columns if not column.comment]
    return found


def _comment(con: duckdb.DuckDBPyConnection, table: str, column: str) -> str | None:
    row = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = ? AND column_name = ?", [table, column]
    ).fetchone()
    assert row is not None, f"{table}.{column} does not exist"
    return str(row[0]) if row[0] is not None else None


def test_every_table_view_and_column_has_a_comment_after_migrate(con: duckdb.DuckDBPyConnection) -> None:
    missing = _uncommented(con)
    assert not missing, f"describe these in warehouse/dictionary.toml: {', '.join(missing)}"


def test_every_table_macro_has_a_call_and_every_column_it_returns_is_described(
    con: duckdb.DuckDBPyConnection,
) -> None:
    relations = dictionary.load(dictionary.source_text())
    live = dictionary.live_schema(con, dictionary.calls(relations))
    macros = {name: relation for name, relation in live.items() if relation.kind == "macro"}
    assert {"users_as_of", "user_groups_as_of", "user_authorities_as_of"} <= set(macros)

    missing = [name for name, macro in macros.items() if not macro.columns]
    missing += [
        f"{name}.{column.name}"
        for name, macro in macros.items()
        for column in macro.columns
        if column.name not in relations[name].columns
    ]
    assert not missing, f"give a call, describe the columns in warehouse/dictionary.toml: {missing}"


def test_the_dictionary_names_nothing_the_schema_lacks(con: duckdb.DuckDBPyConnection) -> None:
    relations = dictionary.load(dictionary.source_text())
    extra = dictionary.unknown(relations, dictionary.live_schema(con, dictionary.calls(relations)))
    assert not extra, f"warehouse/dictionary.toml describes what the schema lacks: {', '.join(extra)}"


def test_a_history_table_has_its_current_tables_descriptions_and_its_own(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert _comment(con, "users_history", "email") == _comment(con, "users", "email")
    assert _comment(con, "groups_history", "valid_to") == _comment(con, "decisions_history", "valid_to")
    assert _comment(con, "users_history", "run_id") != _comment(con, "users", "run_id")


def test_the_docs_and_the_described_schema_show_the_dictionary() -> None:
    text, schema = dictionary_page.rendered()
    page = dictionary_page.DOCUMENT.read_text(encoding="utf-8")
    assert dictionary_page.with_section(page, text) == page, (
        "docs/data-dictionary.md differs from warehouse/dictionary.toml: run `make dictionary`"
    )
    assert dictionary_page.SCHEMA.read_text(encoding="utf-8") == schema, (
        "warehouse/described_schema.json differs from the migrations and dictionary: run `make dictionary`"
    )


def test_migrate_applies_the_comments_once_and_again_when_the_dictionary_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "warehouse.duckdb")
    with duckdb.connect(path) as con:
        migrate(con)
        con.execute("COMMENT ON COLUMN users.email IS 'changed by hand'")
    with duckdb.connect(path) as con:
        migrate(con)
        assert _comment(con, "users", "email") == "changed by hand", "the comments were applied again"

    text = dictionary.source_text()
    old = 'email = "The user\'s email address (email)."'
    assert old in text
    monkeypatch.setattr(
        dictionary, "source_text", lambda: text.replace(old, 'email = "Where mail reaches them."')
    )
    with duckdb.connect(path) as con:
        migrate(con)
        assert _comment(con, "users", "email") == "Where mail reaches them."
        assert _comment(con, "users_history", "email") == "Where mail reaches them."


def test_a_new_migration_that_recreates_a_view_gets_its_comments_back(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recreated view or table loses its comments, so the migrations applied are part of the fingerprint."""
    found = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'v_api_budget'").fetchone()
    assert found is not None
    recreate = str(found[0]).replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1)
    shipped = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [*shipped, (shipped[-1][0] + 1, "again", recreate)])

    assert migrate(con) == [shipped[-1][0] + 1]
    assert not _uncommented(con)


def test_a_failed_apply_leaves_no_comment_and_no_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comments are applied in one transaction: all of them and the fingerprint, or nothing."""
    monkeypatch.setattr(
        dictionary,
        "comment_statements",
        lambda *_: ["COMMENT ON TABLE users IS 'applied'", "COMMENT ON TABLE no_such_table IS 'fails'"],
    )
    with duckdb.connect(":memory:") as con:
        with pytest.raises(duckdb.CatalogException):
            migrate(con, from_baseline=False)  # a new database built from the baseline applies no comment
        assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'users'").fetchall() == [
            (None,)
        ]
        assert con.execute(f"SELECT count(*) FROM {dictionary.APPLIED_TABLE}").fetchall() == [(0,)]  # noqa: S608


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[tables.t]\ndescription = "x"\ncommon = ["c"]', "common names no [common] entry: c"),
        ('[common]\nc = "x"\n[tables.t]\ndescription = "x"', "[common] entries no relation uses: c"),
        ('[tables.t]\nhistory_of = "u"', "t: refers to u, which the dictionary does not describe"),
        (
            '[tables.t.columns]\na = { same_as = "u.b" }\n[tables.u.columns]\nc = "x"',
            "t.a: same_as u.b, which the dictionary does not describe",
        ),
        (
            '[tables.t.columns]\na = { same_as = "u.b" }\n[tables.u.columns]\nb = { same_as = "t.a" }',
            "same_as cycle",
        ),
    ],
)
def test_a_dictionary_that_contradicts_itself_is_refused(text: str, error: str) -> None:
    with pytest.raises(dictionary.DictionaryError, match=re.escape(error)):
        dictionary.load(text)


def test_the_schemas_a_run_stages_in_are_the_migrated_warehouses(con: duckdb.DuckDBPyConnection) -> None:
    # The extract stages with the Arrow schemas `warehouse.schema` builds from the described columns (not a
    # migration a process): each must be exactly what the migrated table gives, column by column, in a
    # session in UTC as the tool's own are (warehouse.db), whatever the process's zone.
    con.execute("SET TimeZone = 'UTC'")
    tables = [
        str(row[0])
        for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT internal"
        ).fetchall()
    ]
    assert tables
    built = arrow_schemas()
    for table in tables:
        migrated = con.sql(f'SELECT * FROM "{table}" LIMIT 0').to_arrow_table().schema  # noqa: S608 (names from the catalog of DuckDB)
        assert built.get(table) == migrated, table
