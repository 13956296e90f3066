"""The data dictionary: what every table, view and column of the warehouse means, written once in
``warehouse/dictionary.toml`` and used twice, as the database's own comments (``COMMENT ON``, applied by
`warehouse.migrate.migrate`) and as the column tables of ``docs/data-dictionary.md``
(`warehouse.dictionary_page`: ``python -m warehouse.dictionary_page --write``, or ``make dictionary``).

The file has these kinds of entries (its header says more):

- ``[tables.<name>]`` and ``[views.<name>]``: a ``description`` and ``[<...>.columns]``, column -> text;
- ``[macros.<name>]``: a table macro, with a ``description``, an example ``call`` (its columns are what
  that call returns) and its columns' texts, its own or ``columns_of = "<relation>"``'s;
- ``common = [...]`` in a relation: columns that mean the same wherever they appear (``[common]``);
- ``{ same_as = "<relation>.<column>" }`` as a column's value: a view column that copies a table's;
- ``history_of = "<table>"`` (``item_history_of``): an SCD2 history table of records (of the items of a
  record's list), described by ``[history]`` (``[item_history]``: its own columns and a description naming
  ``{table}``) on top of every column description of its current table.

Comments are applied only where the live schema has the relation or column, so a dictionary that lags the
migrations never stops a connection: ``tests/test_dictionary.py`` names what is missing or extra.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import duckdb

from models.errors import AuthoritySyncError
from warehouse.db import quoted

Kind = Literal["table", "view", "macro"]

HISTORIES = {"history_of": "history", "item_history_of": "item_history"}
"""An entry's key naming the current table it is the history of -> the section describing that history."""

SOURCE = "dictionary.toml"
"""The generated reference page; its section between the markers is rendered from this dictionary."""
APPLIED_TABLE = "schema_dictionary"
"""The one-row table that remembers which dictionary and migrations the comments were applied for."""


class DictionaryError(AuthoritySyncError, ValueError):
    """The dictionary file contradicts itself (a reference to nothing, a cycle of references) or holds
    text that describes nothing (a common entry no relation uses)."""


@dataclass(frozen=True)
class Relation:
    """One table or view as the dictionary describes it."""

    name: str
    kind: Kind
    description: str
    columns: dict[str, str]
    """Every column description that applies, its own, its history's, its current table's and common ones."""
    named: frozenset[str]
    """The columns this entry names itself (own, common and history columns): each must exist."""
    call: str | None = None
    """A macro's example call: what it returns are its columns."""


@dataclass(frozen=True)
class LiveColumn:
    """A column of the connected database."""

    name: str
    data_type: str
    comment: str | None


@dataclass(frozen=True)
class LiveRelation:
    """A table or view of the connected database, with its columns in order."""

    name: str
    kind: Kind
    comment: str | None
    columns: tuple[LiveColumn, ...]


@cache
def source_text() -> str:
    """The dictionary file shipped with the package (read once per process: migrate() runs often)."""
    return resources.files("warehouse").joinpath(SOURCE).read_text(encoding="utf-8")


def load(text: str) -> dict[str, Relation]:
    """Every relation of the dictionary ``text``, in the file's order (tables, then views)."""
    data = tomllib.loads(text)
    entries: dict[str, tuple[Kind, dict[str, Any]]] = {
        **{name: ("table", entry) for name, entry in data.get("tables", {}).items()},
        **{name: ("view", entry) for name, entry in data.get("views", {}).items()},
        **{name: ("macro", entry) for name, entry in data.get("macros", {}).items()},
    }
    common = data.get("common", {})
    unused = sorted(
        set(common) - {column for _, entry in entries.values() for column in entry.get("common", [])}
    )
    if unused:
        raise DictionaryError(f"[common] entries no relation uses: {', '.join(unused)}")
    resolver = _Resolver(entries, common, {section: data.get(section, {}) for section in HISTORIES.values()})
    return {name: resolver.relation(name) for name in entries}


class _Resolver:
    """Resolves the references of a parsed dictionary (common columns, ``same_as``, ``history_of``)."""

    def __init__(
        self,
        entries: dict[str, tuple[Kind, dict[str, Any]]],
        common: dict[str, str],
        histories: dict[str, dict[str, Any]],
    ) -> None:
        self.entries = entries
        self.common = common
        self.histories = histories
        self.resolving: list[str] = []

    def relation(self, name: str) -> Relation:
        """One relation with every reference resolved."""
        kind, entry = self.entries[name]
        own = dict(entry.get("columns", {}))
        unknown_common = [column for column in entry.get("common", []) if column not in self.common]
        if unknown_common:
            raise DictionaryError(f"{name}: common names no [common] entry: {', '.join(unknown_common)}")
        columns = {column: self.common[column] for column in entry.get("common", [])}
        named = set(own) | set(columns)
        description = entry.get("description", "")
        for key, section in HISTORIES.items():
            if key in entry:
                current = self._entry(name, entry[key])
                history = self.histories[section]
                columns |= self.relation(current).columns | history.get("columns", {})
                named |= set(history.get("columns", {}))
                description = description or history.get("description", "").replace("{table}", current)
        if "columns_of" in entry:
            columns |= self.relation(self._entry(name, entry["columns_of"])).columns
        columns |= {column: self.text(name, column, value) for column, value in own.items()}
        return Relation(
            name,
            kind,
            _flat(description),
            {c: _flat(t) for c, t in columns.items()},
            frozenset(named),
            entry.get("call"),
        )

    def text(self, relation: str, column: str, value: str | dict[str, str]) -> str:
        """A column's description: its text, or the text of the column it is the ``same_as``."""
        if isinstance(value, str):
            return value
        target = value["same_as"]
        if target in self.resolving:
            raise DictionaryError(f"{relation}.{column}: same_as cycle through {' -> '.join(self.resolving)}")
        other, _, other_column = target.partition(".")
        self._entry(f"{relation}.{column}", other)
        self.resolving.append(target)
        try:
            found = self.relation(other).columns.get(other_column)
        finally:
            self.resolving.pop()
        if found is None:
            raise DictionaryError(
                f"{relation}.{column}: same_as {target}, which the dictionary does not describe"
            )
        return found

    def _entry(self, where: str, name: str) -> str:
        """``name`` itself, once it is known to be a relation of the dictionary."""
        if name not in self.entries:
            raise DictionaryError(f"{where}: refers to {name}, which the dictionary does not describe")
        return name


def _flat(text: str) -> str:
    """One line: the file wraps long texts over several lines, a comment and a table cell hold one."""
    return " ".join(text.split())


def live_schema(
    con: duckdb.DuckDBPyConnection, calls: Mapping[str, str | None] | None = None
) -> dict[str, LiveRelation]:
    """The tables, views and table macros of the connected database's main schema (not DuckDB's own, not
    temporary ones), with their columns in order; a macro's columns are those of its call in ``calls``
    (none without one)."""
    relations = con.execute(
        "SELECT table_name, 'table', comment FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
        "UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
        "UNION ALL SELECT function_name, 'macro', comment FROM duckdb_functions() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
        "AND function_type = 'table_macro'"
    ).fetchall()
    columns: dict[str, list[LiveColumn]] = {}
    for table, column, data_type, comment in con.execute(
        "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
        "ORDER BY table_name, column_index"
    ).fetchall():
        columns.setdefault(table, []).append(LiveColumn(column, data_type, comment))
    for name, call in (calls or {}).items():
        if call and any(relation[0] == name and relation[1] == "macro" for relation in relations):
            columns[name] = call_columns(con, call)
    return {
        name: LiveRelation(name, kind, comment, tuple(columns.get(name, ())))
        for name, kind, comment in relations
    }


def view_reads(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, ...]]:
    """Each view of the main schema: the tables and views its SQL reads, through the table macros it calls
    (a name is read when it appears as a word of the SQL; comments name no relation in our views)."""
    views = dict(
        con.execute(
            "SELECT view_name, sql FROM duckdb_views() "
            "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal"
        ).fetchall()
    )
    macros = dict(
        con.execute(
            "SELECT function_name, macro_definition FROM duckdb_functions() "
            "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal "
            "AND function_type IN ('macro', 'table_macro')"
        ).fetchall()
    )
    tables = {
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal"
        ).fetchall()
    }

    def reads(sql: str, seen: frozenset[str]) -> set[str]:
        found: set[str] = set()
        for word in set(re.findall(r"[a-z_][a-z0-9_]*", sql.lower())) - seen:
            if word in tables or word in views:
                found.add(word)
            elif word in macros:
                found |= reads(str(macros[word]), seen | {word})
        return found

    return {name: tuple(sorted(reads(str(sql), frozenset({name})))) for name, sql in sorted(views.items())}


def call_columns(con: duckdb.DuckDBPyConnection, call: str) -> list[LiveColumn]:
    """The columns a table macro's call returns, in order (no rows are read)."""
    con.execute(f"SELECT * FROM {call} LIMIT 0").fetchall()  # noqa: S608 - a call the dictionary names
    return [LiveColumn(str(name), str(kind), None) for name, kind, *_ in con.description or []]


def calls(relations: dict[str, Relation]) -> dict[str, str | None]:
    """Each macro's example call, by name."""
    return {name: relation.call for name, relation in relations.items() if relation.kind == "macro"}


def unknown(relations: dict[str, Relation], live: dict[str, LiveRelation]) -> list[str]:
    """What the dictionary names and the live schema lacks: a relation (or one of the wrong kind, as
    ``name (a view, not a table)``) or ``table.column``."""
    found = []
    for name, relation in relations.items():
        there = live.get(name)
        if there is None:
            found.append(name)
            continue
        if there.kind != relation.kind:
            found.append(f"{name} (a {there.kind}, not a {relation.kind})")
        columns = {column.name for column in there.columns}
        found += [f"{name}.{column}" for column in sorted(relation.named - columns)]
    return found


def comment_statements(relations: dict[str, Relation], live: dict[str, LiveRelation]) -> list[str]:
    """The ``COMMENT ON`` statements that make the live comments say what the dictionary says. Only what
    differs, and only for what exists: a relation or column the dictionary does not describe keeps its
    comment."""
    statements = []
    for name, relation in live.items():
        described = relations.get(name)
        if described is None:
            continue
        target = quoted(name)
        if described.description and relation.comment != described.description:
            statements.append(
                f"COMMENT ON {_COMMENTED[relation.kind]} {target} IS {_literal(described.description)}"
            )
        if relation.kind == "macro":
            continue  # a macro's columns are not objects of the catalog: only the docs describe them
        for column in relation.columns:
            text = described.columns.get(column.name)
            if text and column.comment != text:
                statements.append(f"COMMENT ON COLUMN {target}.{quoted(column.name)} IS {_literal(text)}")
    return statements


_COMMENTED: dict[Kind, str] = {"table": "TABLE", "view": "VIEW", "macro": "MACRO TABLE"}
"""What ``COMMENT ON`` calls each kind."""


def _literal(text: str) -> str:
    # COMMENT ON takes no bound parameters: the text is written as an SQL string literal.
    return "'" + text.replace("'", "''") + "'"


def fingerprint(text: str, versions: Iterable[int]) -> str:
    """What the comments depend on: the dictionary's text and the migrations applied (a migration that
    recreates a view or table drops its comments)."""
    listed = ",".join(str(version) for version in sorted(versions))
    return hashlib.sha256(f"{text}\n{listed}".encode()).hexdigest()


def document(con: duckdb.DuckDBPyConnection, versions: Iterable[int]) -> bool:
    """Apply the dictionary as comments, in one transaction, unless it was applied already for this
    dictionary and these migrations (one small read: this runs on every warehouse connection). Returns
    whether it applied."""
    text = source_text()
    wanted = fingerprint(text, versions)
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {APPLIED_TABLE} "
        "(fingerprint VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    current = con.execute(f"SELECT fingerprint FROM {APPLIED_TABLE}").fetchall()  # noqa: S608 - fixed name
    if current == [(wanted,)]:
        return False
    con.begin()
    try:
        for statement in comment_statements(load(text), live_schema(con)):
            con.execute(statement)
        con.execute(f"DELETE FROM {APPLIED_TABLE}")  # noqa: S608 - fixed name
        con.execute(f"INSERT INTO {APPLIED_TABLE} (fingerprint) VALUES (?)", [wanted])  # noqa: S608
        con.commit()
    except duckdb.Error:
        con.rollback()
        raise
    return True
