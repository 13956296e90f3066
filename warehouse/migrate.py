"""Ordered SQL migrations (``warehouse/migrations/NNNN_name.sql``), each applied once and recorded in
``schema_migrations``; then what the list catalog renders (`warehouse.catalog_sql`: each table's as-of
macro, the change log of a table added) and the data dictionary's comments (`warehouse.dictionary`).

An empty database is built from `BASELINE` instead (`warehouse.baseline` renders it from all three): one
script in one transaction, where replaying 29 migrations and some 900 comments one by one cost 1.5-1.9 s of
CPU. The script records the migrations it stands for, so a migration added after it was rendered is applied
on top, as on any warehouse of an earlier release. A new warehouse file does not even run the script: it
starts as a copy of the empty warehouse the script built (`warehouse.empty`)."""

from __future__ import annotations

from functools import cache
from importlib import resources

import duckdb

from models.errors import AuthoritySyncError
from warehouse.catalog_sql import FINGERPRINT_KEY, apply_catalog
from warehouse.catalog_sql import fingerprint as catalog_fingerprint
from warehouse.dictionary import APPLIED_TABLE, document, source_text
from warehouse.dictionary import fingerprint as dictionary_fingerprint

_MIGRATIONS = "migrations"
BASELINE = "baseline.sql"
"""The script a new warehouse is built from, beside this module."""


class NewerWarehouseError(AuthoritySyncError, RuntimeError):
    """The warehouse holds migrations this release does not know: a newer release wrote it."""


class OlderWarehouseError(AuthoritySyncError, RuntimeError):
    """The warehouse lacks migrations of this release, and the one opening it does not upgrade it."""


def pending(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The migrations of this release a warehouse written by an earlier one lacks; none for a new file
    (no ``schema_migrations`` yet), which is built whole when opened."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    if not exists:
        return []
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    return [version for version, _, _ in available() if version not in done]


@cache  # read at every connection of the warehouse: the files are the release's, read once a process
def available() -> tuple[tuple[int, str, str], ...]:
    """Every migration shipped with the package: (version, name, SQL), in order."""
    found = []
    for entry in resources.files("warehouse").joinpath(_MIGRATIONS).iterdir():
        if entry.name.endswith(".sql"):
            version, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(version), name, entry.read_text(encoding="utf-8")))
    return tuple(sorted(found))


def up_to_date(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse holds exactly this release's migrations, catalog macros and dictionary comments,
    in one read: every connection of the warehouse asks, and the steps of `migrate` and `pending` each ask
    their own (about a dozen statements, 12-15 ms of an open of a few tens). Any doubt (a new file, an
    older or newer schema, a catalog or dictionary of another release) answers False: `migrate` decides."""
    versions = [version for version, _, _ in available()]
    expected = (versions, catalog_fingerprint(), [dictionary_fingerprint(source_text(), versions)])
    try:
        applied = f"(SELECT list(fingerprint) FROM {APPLIED_TABLE})"  # noqa: S608 - a fixed name
        found = con.execute(
            "SELECT (SELECT list(version ORDER BY version) FROM schema_migrations), "  # noqa: S608 - fixed names
            f"(SELECT value FROM warehouse_meta WHERE key = ?), {applied}",
            [FINGERPRINT_KEY],
        ).fetchone()
    except duckdb.CatalogException:  # a table a current warehouse holds is missing
        return False
    return found == expected


def migrate(con: duckdb.DuckDBPyConnection, describe: bool = True, from_baseline: bool = True) -> list[int]:
    """Bring the schema up to date, then render the list catalog's macros (`warehouse.catalog_sql`);
    returns the versions applied now. Each migration is one transaction.
    With ``describe`` the data dictionary is then applied as comments, when it or the schema changed
    (a throwaway database that only needs the schema can skip it: a full apply costs about 0.1 s).
    An empty database with ``describe`` and ``from_baseline`` is built from `BASELINE` first (its versions
    are not among those returned); without ``from_baseline`` every migration is replayed, as the baseline's
    own rendering needs."""
    if describe and from_baseline and _empty(con):
        _build_from_baseline(con)
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    known = available()
    newer = sorted(done - {version for version, _, _ in known})
    if newer:
        raise NewerWarehouseError(
            f"this warehouse was migrated by a newer authority-sync (migration {newer[-1]}, this release "
            f"knows up to {known[-1][0]}): use that release, or restore the copy its upgrade kept"
        )
    applied = []
    for version, name, sql in known:
        if version in done:
            continue
        con.begin()
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])
            con.commit()
        except duckdb.Error:
            con.rollback()
            raise
        applied.append(version)
    apply_catalog(con)
    if describe:
        document(con, done | set(applied))
    return applied


def _empty(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection's database holds no table or view yet: a new warehouse."""
    found = con.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()) + "
        "(SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND NOT internal)"
    ).fetchone()
    return found is not None and found[0] == 0


def _build_from_baseline(con: duckdb.DuckDBPyConnection) -> None:
    """Run `BASELINE` in one transaction: on a failure the database is left empty."""
    script = resources.files("warehouse").joinpath(BASELINE).read_text(encoding="utf-8")
    con.begin()
    try:
        con.execute(script)
        con.commit()
    except duckdb.Error:
        con.rollback()
        raise
