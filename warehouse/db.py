"""Every DuckDB connection authority-sync opens, opened one way.

Offline: DuckDB never installs or auto-loads an extension here. Everything the warehouse needs (JSON,
Parquet, ICU's time zones) is built into the package, and a write-ahead log left by a killed process is
replayed at the next open: with auto-install on, replaying a migration that calls ``timezone()`` made
DuckDB try to download ``icu`` first, and without a network the warehouse could not be opened at all.

Small row groups: a file opened for writing is attached with `ROW_GROUP_ROWS` rows to a row group. At
DuckDB's default (122,880) a tenant's whole table is one row group, and a checkpoint rewrites a row group
whenever rows are appended to it or it is vacuumed: a nightly run that changed 1% of the decisions
rewrote all of them, `raw` texts included (CHECKPOINT 0.5 s at 5,000 decisions, 2 s at 20,000; 0.15 and
1 s in row groups of 2,048 rows, docs/benchmarks.md). With small row groups it rewrites the
last, partly filled one and the few it merges. DuckDB takes the size at ``ATTACH`` only, not as a setting,
and does not keep it in the file: every writer must ask for it, or its checkpoints merge the row groups
back. Readers need nothing (a row group of any size reads the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb

ConfigValue = str | bool | int | float | list[str]

OFFLINE: dict[str, ConfigValue] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""DuckDB settings of every connection: no extension is installed or loaded on demand."""

ROW_GROUP_ROWS = 2048
"""Rows to a row group of a file written here (a multiple of DuckDB's vector of 2,048 rows)."""

_BUILT_IN = frozenset({"memory", "system", "temp"})
"""Names of DuckDB's own catalogs, which an attached file cannot take."""


def open_database(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    config: Mapping[str, ConfigValue] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection to the DuckDB file ``path`` (in memory when None), offline, with ``config`` on top. A
    file opened for writing is its connection's only database, under its own name as when DuckDB opens it
    directly, with `ROW_GROUP_ROWS` rows to a row group."""
    settings = {**OFFLINE, **(config or {})}
    if path is None or read_only:
        return duckdb.connect(":memory:" if path is None else str(path), read_only=read_only, config=settings)
    con = duckdb.connect(":memory:", config=settings)
    try:
        name = _catalog_name(Path(path))
        con.execute(f'ATTACH ? AS "{name}" (ROW_GROUP_SIZE {ROW_GROUP_ROWS})', [str(path)])
        con.execute(f'USE "{name}"')
        con.execute("DETACH memory")
    except BaseException:
        con.close()
        raise
    return con


def _catalog_name(path: Path) -> str:
    """The catalog name DuckDB gives the file when it opens it directly (its stem), unless it is a name of
    DuckDB's own (then ``<stem>_file``); double quotes doubled for a quoted identifier."""
    stem = path.name.split(".")[0] or "warehouse"
    name = f"{stem}_file" if stem.lower() in _BUILT_IN else stem
    return name.replace('"', '""')
