"""Publish a reader copy of the warehouse after each commit, so that analysts never open the writer's file.

Any DuckDB session on the writer's file, even a read-only one, holds DuckDB's lock on it and makes the next
commit wait and fail. Readers open the published copy instead (``ADM_PUBLISH_PATH``, by default
``<warehouse stem>.analytics.duckdb`` beside the warehouse):

- The copy is the warehouse file itself, copied after a CHECKPOINT, when its storage format is one the
  readers open (a warehouse this tool created is); otherwise DuckDB writes it (``ATTACH … (STORAGE_VERSION
  …)``, ``COPY FROM DATABASE``: tables, views, macros, types, sequences, indexes, constraints and
  comments). Either way it goes to a temporary file beside the target, is checked, is on the disk (a copy
  of the file is flushed with ``fsync``; DuckDB flushes one it writes), and ``os.replace`` puts it in
  place. A reader opens either the previous copy or the new one, never half
  of one; a reader that holds the previous copy open keeps reading it (its inode) until it reconnects, and
  never delays a sync.
- The copy is written in an older storage format (``ADM_PUBLISH_STORAGE_VERSION``, default v1.4.0), so an
  analyst's DuckDB 1.4 opens it even when the writer's DuckDB is newer.
- Optionally (``ADM_PUBLISH_PARQUET``) one Parquet file per table and view, for pandas, pyarrow or Polars
  without DuckDB, under ``<copy stem>-parquet/``, where ``manifest.json`` names the current publish's
  folder and files (`warehouse.parquet`).

A publish that fails leaves every previous copy in place and no temporary file; the caller decides what a
failure means (`publish_run`: a warning of a run that did commit).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb

from models.errors import AuthoritySyncError
from warehouse.changes import text_literal
from warehouse.db import open_database, quoted
from warehouse.files import share_with_group
from warehouse.parquet import (
    current_folder,
    new_folder,
    remove_old,
    write_folder,
    write_manifest_aside,
)
from warehouse.publish_target import MANIFEST, PublishTarget, same_file_problem
from warehouse.runs import RunRecord

logger = logging.getLogger(__name__)

ALIAS = "adm_published"
"""The name the copy is attached under while it is written (not a name a warehouse file is likely to have)."""


class PublishError(AuthoritySyncError, RuntimeError):
    """The copy cannot be published, or does not hold what the warehouse holds."""


@dataclass(frozen=True)
class Published:
    """How a run's publish went: its seconds, or the one-line warning of its failure."""

    target: PublishTarget
    seconds: float | None = None
    error: str | None = None


def for_readers(warehouse: Path, published: Path) -> Path:
    """The file a reader should open: the published copy once there is one, else the warehouse."""
    return published if published.is_file() else warehouse


def publish_run(con: duckdb.DuckDBPyConnection, target: PublishTarget, record: RunRecord) -> Published:
    """Publish after the run's commit. A failure does not undo or fail the committed run: it is added to
    the run's warnings, and readers keep the previous copy. Only a publish that completed records its time
    (``phase_seconds["publish"]``): the warning says what happened to the other."""
    published = try_publish(con, target, record.run_id)
    if published.error is not None:
        record.warnings.append(published.error)
    elif published.seconds is not None:
        record.phase_seconds["publish"] = published.seconds
    return published


def try_publish(con: duckdb.DuckDBPyConnection, target: PublishTarget, label: str) -> Published:
    """Publish, and say how it went: a failure is logged in one line and returned, never raised (what was
    written before it stands, and readers keep the previous copy). ``label`` names the publish."""
    started = time.perf_counter()
    try:
        publish(con, target, label)
    except (duckdb.Error, OSError, PublishError) as error:
        return failed(target, label, error)
    return Published(target, round(time.perf_counter() - started, 3))


def failed(target: PublishTarget, label: str, error: BaseException) -> Published:
    """A publish that failed with ``error``: its one-line warning, logged."""
    warning = f"publish for readers failed, readers keep the previous copy: {_first_line(error)}"
    logger.warning("%s: %s", label, warning)
    return Published(target, error=warning)


def publish(con: duckdb.DuckDBPyConnection, target: PublishTarget, label: str) -> None:
    """Publish the committed state of ``con``'s database (the caller holds the writer lock, so nothing
    changes meanwhile). Everything is written aside first and moved in place last; on any failure the
    previous copies stay and the temporary files are removed. ``label`` names the Parquet folder."""
    source = current_database(con)
    source_file = _database_path(con, source)
    problem = same_file_problem(source_file, target.path)
    if problem:
        raise PublishError(problem)
    target.path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in target.path.parent.glob(f".{target.path.name}.tmp-*"):  # of a killed publish
        leftover.unlink(missing_ok=True)
    temporary = target.path.with_name(f".{target.path.name}.tmp-{os.getpid()}")
    folder = manifest = None
    previous = current_folder(target.parquet_root)
    try:
        if readable_as(source_file, target.storage_version):
            _copy_file(con, source, source_file, temporary)
        else:
            copy_database(con, source, temporary, target.storage_version)
        if target.parquet:
            folder = new_folder(target.parquet_root, label)
            relations = [(schema, name) for schema, name, _ in _relations(con, source)]
            files = write_folder(con, source, relations, folder)
            manifest = write_manifest_aside(target.parquet_root, folder, files, label)
        if target.readers_group:
            shared = (temporary, target.parquet_root) if target.parquet else (temporary,)
            for path in shared:
                share_with_group(path, target.readers_group)
        temporary.replace(target.path)
        if manifest is not None:
            manifest.replace(target.parquet_manifest)
    except BaseException:
        _discard(temporary, folder, manifest)
        raise
    if folder is not None:
        remove_old(target.parquet_root, {MANIFEST, folder.name, previous})


def readable_as(path: Path, storage_version: str) -> bool:
    """Whether the DuckDB file at ``path`` is already in a storage format that readers of
    ``storage_version`` open: then the copy can be the file itself. A warehouse created by this tool is
    (`warehouse.empty.STORAGE_VERSION`); one created by DuckDB 2.0's default is not."""
    return _storage_number(path) <= _storage_number_of(storage_version)


def _storage_number(path: Path) -> int:
    """The storage format number in a DuckDB file's header (bytes 12..20, after the ``DUCK`` magic)."""
    with path.open("rb") as file:
        header = file.read(20)
    return int.from_bytes(header[12:20], "little")


@cache
def _storage_number_of(storage_version: str) -> int:
    """The storage format number DuckDB writes for ``storage_version``, read from a file it creates."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.duckdb"
        open_database(probe, config={"storage_compatibility_version": storage_version}).close()
        return _storage_number(probe)


def _copy_file(con: duckdb.DuckDBPyConnection, source: str, source_file: Path, path: Path) -> None:
    """Copy the warehouse file itself (database ``source``, stored in ``source_file``) to ``path``, then
    check the copy like a DuckDB-made one. CHECKPOINT first writes everything committed into the file (an
    empty WAL); the writer lock, held by the caller, and DuckDB's own file lock keep every other writer out
    while the bytes are read. Much cheaper than ``COPY FROM DATABASE`` (which rebuilds every table and
    index: 16 s at 100,000 decisions)."""
    _discard(path)
    con.execute("CHECKPOINT")
    shutil.copyfile(source_file, path)
    _on_disk(path)
    con.execute(f"ATTACH ? AS {ALIAS} (READ_ONLY)", [str(path)])
    try:
        # The bytes of the catalog are the warehouse's own: its views bind as the warehouse's do, so the
        # check is that the copy opens and every table holds its rows (binding each view in both
        # databases was a fifth of a nightly commit's CPU).
        _check_copy(con, source, views=False)
    finally:
        con.execute(f"DETACH {ALIAS}")


def _on_disk(path: Path) -> None:
    """Wait until the file at ``path`` is on the disk (``fsync``), before it is renamed into place: else a
    crash could leave the readers' copy empty or torn where the file system does not flush a file renamed
    over another. On ext4, which does, the wait was counted in the run's next write instead: its last
    ``UPDATE`` of ``sync_runs`` took 0.28 s of a nightly at 20,000 decisions (docs/benchmarks.md)."""
    with path.open("rb") as file:
        os.fsync(file.fileno())


def copy_database(con: duckdb.DuckDBPyConnection, source: str, path: Path, storage_version: str) -> None:
    """Copy the whole database into a new file at ``path`` in ``storage_version``'s format, checked."""
    _discard(path)
    con.execute(f"ATTACH ? AS {ALIAS} (STORAGE_VERSION ?)", [str(path), storage_version])
    try:
        con.execute(f"COPY FROM DATABASE {quoted(source)} TO {ALIAS}")
        _check_copy(con, source)
    finally:
        # Detaching checkpoints the copy into its one file: no WAL is left beside it to publish.
        con.execute(f"DETACH {ALIAS}")


def _check_copy(con: duckdb.DuckDBPyConnection, source: str, *, views: bool = True) -> None:
    """The copy holds every table with its rows and (``views``) every view, binding to the same columns:
    whatever ``COPY FROM DATABASE`` may leave behind fails the publish instead of reaching readers."""
    wanted, copied = _contents(con, source, views), _contents(con, ALIAS, views)
    if wanted != copied:
        differing = sorted(
            name for name in wanted.keys() | copied.keys() if wanted.get(name) != copied.get(name)
        )
        raise PublishError(f"the copy differs from the warehouse in {', '.join(differing[:5])}")


def _contents(con: duckdb.DuckDBPyConnection, database: str, views: bool) -> dict[str, object]:
    """Each table's row count and (``views``) each view's columns, by qualified name."""
    contents: dict[str, object] = {}
    tables = []
    for schema, name, is_view in _relations(con, database):
        relation = quoted(database, schema, name)
        if not is_view:
            tables.append((f"{schema}.{name}", relation))
        elif views:
            con.execute(f"SELECT * FROM {relation} LIMIT 0").fetchall()  # noqa: S608 - names from the catalog
            contents[f"{schema}.{name}"] = [column[0] for column in con.description or []]
    if tables:
        # One statement counts every table: a statement costs milliseconds, and a warehouse has ~50 tables.
        counted = [f"SELECT {text_literal(label)}, count(*) FROM {relation}" for label, relation in tables]  # noqa: S608
        counts = " UNION ALL ".join(counted)
        contents |= {str(label): count for label, count in con.execute(counts).fetchall()}
    return contents


def _relations(con: duckdb.DuckDBPyConnection, database: str) -> list[tuple[str, str, bool]]:
    """The tables and views of ``database`` (schema, name, is a view), without DuckDB's own."""
    rows = con.execute(
        "SELECT schema_name, table_name, false FROM duckdb_tables() "
        "WHERE database_name = $db AND NOT internal "
        "UNION ALL SELECT schema_name, view_name, true FROM duckdb_views() "
        "WHERE database_name = $db AND NOT internal ORDER BY 1, 2",
        {"db": database},
    ).fetchall()
    return [(str(schema), str(name), bool(is_view)) for schema, name, is_view in rows]


def _discard(*paths: Path | None) -> None:
    """Remove what a publish wrote aside (a file with its WAL, a folder, a manifest); absent ones are fine."""
    for path in paths:
        if path is None:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            continue
        path.unlink(missing_ok=True)
        path.with_name(f"{path.name}.wal").unlink(missing_ok=True)


def current_database(con: duckdb.DuckDBPyConnection) -> str:
    """The name of the database ``con`` opened."""
    found = con.execute("SELECT current_database()").fetchall()
    return str(found[0][0])


def _database_path(con: duckdb.DuckDBPyConnection, database: str) -> Path:
    found = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = ?", [database]).fetchall()
    return Path(str(found[0][0]))


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
