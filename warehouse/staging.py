"""Per-run staging: each extract streams its rows into Parquet files (one per table) and a manifest;
the commit step merges them into the warehouse in one transaction.

Parquet on disk, not a DuckDB file, because the extract steps may run in separate processes at the same
time while DuckDB allows one writing process per file; and a staging area that is never committed leaves
the warehouse untouched.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.rows import Row, TableRows
from warehouse.schema import arrow_schema

BATCH_ROWS = 2_000
"""Rows buffered per table before they are written as one Arrow batch (bounds memory)."""


def staging_dir(root: Path, run_id: str, tenant_id: str) -> Path:
    """Where one run stages one tenant's data."""
    return root / run_id / tenant_id


@dataclass
class StagingWriter:
    """Streams rows of several tables into ``<dir>/<table>.parquet`` in Arrow batches."""

    directory: Path
    counts: dict[str, int] = field(default_factory=dict)
    _buffers: dict[str, list[Row]] = field(default_factory=dict)
    _writers: dict[str, pq.ParquetWriter] = field(default_factory=dict)

    def __enter__(self) -> StagingWriter:
        # Arrow's default allocator (mimalloc) keeps freed buffers for reuse; staging makes many short-lived
        # batches, and the system allocator hands them back, so a run's memory stays lower and flat.
        pa.set_memory_pool(pa.system_memory_pool())
        self.directory.mkdir(parents=True, exist_ok=True)
        return self

    def add(self, rows: TableRows) -> None:
        """Buffer the rows of one record; flush a table when its buffer is full."""
        for table, table_rows in rows.items():
            buffer = self._buffers.setdefault(table, [])
            buffer.extend(table_rows)
            self.counts[table] = self.counts.get(table, 0) + len(table_rows)
            if len(buffer) >= BATCH_ROWS:
                self._flush(table)

    def declare(self, *tables: str) -> None:
        """Make sure these tables are staged even when no row came (an empty extract is still an extract)."""
        for table in tables:
            self._buffers.setdefault(table, [])
            self.counts.setdefault(table, 0)

    def _flush(self, table: str) -> None:
        schema = arrow_schema(table)
        writer = self._writers.get(table)
        if writer is None:
            writer = pq.ParquetWriter(self.directory / f"{table}.parquet", schema)
            self._writers[table] = writer
        writer.write_table(pa.Table.from_pylist(self._buffers[table], schema=schema))
        self._buffers[table] = []

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            for table in list(self._buffers):
                self._flush(table)
        for writer in self._writers.values():
            writer.close()


def write_manifest(directory: Path, name: str, manifest: dict[str, Any]) -> None:
    """Record what one extract did (mode, totals, cursor, API calls, warnings) beside its staged files."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.manifest.json").write_text(
        json.dumps(manifest, default=str, indent=1), encoding="utf-8"
    )


def read_manifests(directory: Path) -> dict[str, dict[str, Any]]:
    """Every extract's manifest in a staging directory, by extract name."""
    return {
        path.name.removesuffix(".manifest.json"): json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(directory.glob("*.manifest.json"))
    }


def staged_tables(directory: Path) -> dict[str, Path]:
    """The staged Parquet file of each table."""
    return {path.stem: path for path in sorted(directory.glob("*.parquet"))}


def discard(directory: Path) -> None:
    """Remove a run's staging once it is committed."""
    shutil.rmtree(directory, ignore_errors=True)
