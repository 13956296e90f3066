"""The file a new warehouse starts as: a copy of the empty warehouse shipped beside `BASELINE`, built from
that script by `make dictionary` and named for it (``empty-<digest of the script>.duckdb``).

Running the script costs a new file about 0.8 s of CPU, nearly all of it DuckDB binding its 938 ``COMMENT``
statements and its tables, views and macros one by one; a copy costs 1-2 ms, and stamping it (`place`)
about 0.1 s. Every tenant's first run, every new warehouse of a test or a benchmark, and every CLI process
that creates one paid the script.

The copy is the script's own result: the name proves which script built the file, so a tree whose script
changed since (a migration added, `make dictionary` not yet run) ships no current file, and a new warehouse
is then built from the script as before (`place` answers False). tests/test_baseline.py holds the shipped
file current and equal to the script's result, object by object and row by row. The script stamps each of
its bookkeeping rows (applied migrations, fingerprints, logged tables) with the moment it runs; a copy gets
the moment it is placed, so that its rows say when this warehouse was made, not when the release was built.
A copy also notes that its stored row digests (none yet) follow the placing process's digest scheme
(`warehouse.digest_scheme`), which the shipped file cannot know.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import suppress
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from warehouse.db import open_database, quoted
from warehouse.digest_scheme import note_scheme
from warehouse.migrate import BASELINE, migrate
from warehouse.publish_target import DEFAULT_STORAGE_VERSION

STORAGE_VERSION = DEFAULT_STORAGE_VERSION
"""The storage format of a warehouse this tool creates: the reader copy's by default (DuckDB 1.4 and later
open it), so that the copy (`warehouse.publish`) can be the file itself, copied, instead of a rebuilt
database."""

_INSTANT = "TIMESTAMP WITH TIME ZONE"
"""The type of the bookkeeping rows' instants (as `duckdb_columns` names it)."""


def shipped_name(script: bytes) -> str:
    """The name of the empty warehouse built from the baseline script ``script``."""
    return f"empty-{hashlib.sha256(script).hexdigest()[:16]}.duckdb"


@cache
def shipped() -> Path | None:
    """The empty warehouse built from this tree's `BASELINE`, or None when none is shipped for it."""
    folder = resources.files("warehouse")
    found = Path(str(folder.joinpath(shipped_name(folder.joinpath(BASELINE).read_bytes()))))
    return found if found.is_file() else None


def build(path: Path) -> None:
    """A new warehouse file at ``path`` (which must not exist), built by running `BASELINE`, in
    `STORAGE_VERSION`: what `make dictionary` ships, and a new warehouse when none is shipped."""
    with open_database(path, config={"storage_compatibility_version": STORAGE_VERSION}) as con:
        migrate(con)


def place(path: Path) -> bool:
    """Make ``path`` a new warehouse: a copy of the `shipped` one, its instants stamped now. False when no
    file is shipped for this tree's script (the caller builds one). The copy is made and stamped aside,
    then linked into place only if ``path`` is still free: of two processes creating the same warehouse,
    the first keeps its file and the second opens it, as with a file DuckDB creates."""
    source = shipped()
    if source is None:
        return False
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    os.close(handle)
    aside = Path(name)
    try:
        shutil.copyfile(source, aside)
        with open_database(aside) as con:
            _stamp(con)
        with suppress(FileExistsError):  # another process placed its own first: that one is the warehouse
            os.link(aside, path)
    finally:
        aside.unlink()
    return True


def _stamp(con: duckdb.DuckDBPyConnection) -> None:
    """Set every instant the empty warehouse holds to now, the start of one transaction, as the script
    stamps them when it runs, and note this process's digest scheme. Only its bookkeeping tables hold rows:
    a table DuckDB counts no row in is left alone (one ``UPDATE`` a table costs about a millisecond, and
    there are some forty)."""
    held = con.execute(
        "SELECT t.table_name, list(c.column_name ORDER BY c.column_index) FROM duckdb_tables() t "
        "JOIN duckdb_columns() c USING (database_name, schema_name, table_name) "
        "WHERE c.data_type = ? AND t.estimated_size > 0 AND NOT t.temporary "
        "AND t.database_name = current_database() GROUP BY ALL ORDER BY ALL",
        [_INSTANT],
    ).fetchall()
    con.begin()
    for table, columns in held:
        assignments = ", ".join(f"{quoted(column)} = now()" for column in columns)
        con.execute(f"UPDATE {quoted(table)} SET {assignments}")  # noqa: S608 - the catalog's own names
    note_scheme(con)
    con.commit()
