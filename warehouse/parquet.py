"""The Parquet files of the copy for readers (``ADM_PUBLISH_PARQUET``): one file per table and view, for
pandas, pyarrow or Polars without DuckDB.

- Layout: each publish writes a folder of its own under ``<copy stem>-parquet/``, then replaces
  ``manifest.json`` beside those folders, which names the current folder and the file of each relation.
  Readers read the manifest first: no symbolic link to follow (some shares do not), and a reader never sees
  half a publish. The folder the manifest named before stays, for readers in the middle of a read.
- Schema: a file's schema comes from the warehouse, never from its rows, so it is the same at every
  publish: a column is required only where the warehouse declares it NOT NULL, instants are UTC, JSON
  (``raw``) is a string, and each column carries its description from the data dictionary as field
  metadata (``description``), the relation's own as the schema's.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse.db import quoted
from warehouse.publish_target import MANIFEST

# pyarrow.parquet and pyarrow.compute are imported where used: commands that write no Parquet (`hr plan`)
# then do without their 15 MB.

BATCH_ROWS = 100_000
"""Rows read from DuckDB and written at a time: a table of any size is written in bounded memory."""


def new_folder(root: Path, label: str) -> Path:
    """The folder of a publish's Parquet files: named by its time (so they sort) and ``label``."""
    return root / f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{label}"


def write_folder(
    con: duckdb.DuckDBPyConnection, source: str, relations: list[tuple[str, str]], folder: Path
) -> dict[str, str]:
    """One Parquet file per relation ``(schema, name)`` of the database ``source`` (a view as its rows now:
    Parquet readers cannot run its SQL), in ``folder``, a new one; returns each relation's file name."""
    folder.mkdir(parents=True)
    files = {}
    for schema, name in relations:
        label = name if schema == "main" else f"{schema}.{name}"
        files[label] = f"{label}.parquet"
        _write_file(con, source, schema, name, folder / files[label])
    return files


def _write_file(con: duckdb.DuckDBPyConnection, source: str, schema: str, name: str, path: Path) -> None:
    import pyarrow.parquet as pq

    described = _described(
        con, source, schema, name
    )  # before the rows: a connection reads one result at a time
    relation = quoted(source, schema, name)
    reader = con.sql(f"SELECT * FROM {relation}").to_arrow_reader(BATCH_ROWS)  # noqa: S608 - catalog names
    target = file_schema(reader.schema, described)
    with pq.ParquetWriter(path, target) as writer:
        for batch in reader:
            writer.write_batch(batch.cast(target))


@dataclass(frozen=True)
class Described:
    """What the warehouse says of a relation: its description, and each column's nullability and
    description."""

    description: str | None
    columns: dict[str, tuple[bool, str | None]]


def _described(con: duckdb.DuckDBPyConnection, source: str, schema: str, name: str) -> Described:
    where = [source, schema, name]
    columns = con.execute(
        "SELECT column_name, is_nullable, comment FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = ? AND table_name = ?",
        where,
    ).fetchall()
    comment = con.execute(
        "SELECT comment FROM duckdb_tables() "
        "WHERE database_name = $1 AND schema_name = $2 AND table_name = $3 "
        "UNION ALL SELECT comment FROM duckdb_views() "
        "WHERE database_name = $1 AND schema_name = $2 AND view_name = $3",
        where,
    ).fetchall()
    return Described(
        comment[0][0] if comment else None,
        {column: (bool(nullable), text) for column, nullable, text in columns},
    )


def file_schema(rows: pa.Schema, described: Described) -> pa.Schema:
    """The schema of a relation's file: ``rows`` (what DuckDB gives) with the warehouse's nullability,
    instants in UTC and the dictionary's descriptions."""
    fields = [_field(field, *described.columns.get(field.name, (True, None))) for field in rows]
    metadata = {"description": described.description} if described.description else None
    return pa.schema(fields, metadata=metadata)


def _field(field: pa.Field, nullable: bool, description: str | None) -> pa.Field:
    kind = field.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        # The session's time zone names it (Etc/UTC, Europe/Paris): the instants are the same, so name UTC.
        kind = pa.timestamp(kind.unit, "UTC")
    return pa.field(field.name, kind, nullable, {"description": description} if description else None)


def write_manifest_aside(root: Path, folder: Path, files: dict[str, str], label: str) -> Path:
    """A new manifest naming ``folder`` and its ``files``, beside the current one, ready to replace it."""
    manifest = {
        "folder": folder.name,
        "published_at": datetime.now(UTC).isoformat(),
        "label": label,
        "files": {relation: f"{folder.name}/{file}" for relation, file in sorted(files.items())},
    }
    aside = root / f".{MANIFEST}.tmp-{os.getpid()}"
    aside.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return aside


def current_folder(root: Path) -> str:
    """The folder the manifest names ('' when there is none yet)."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        return ""
    return str(json.loads(manifest.read_text(encoding="utf-8"))["folder"])


def published_files(root: Path) -> dict[str, Path]:
    """Each relation's Parquet file as the manifest in ``root`` names it (what a reader should open)."""
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    return {relation: root / file for relation, file in manifest["files"].items()}


def remove_old(root: Path, keep: set[str]) -> None:
    """Remove every entry of ``root`` but those named in ``keep`` (the manifest, the new folder and the one
    it replaced), and with them the leftovers of killed publishes and the link of the earlier layout."""
    for entry in root.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
