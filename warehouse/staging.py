"""Per-run staging: each list of a tenant sync streams its rows into Parquet files (one per table); the
commit merges them into the warehouse in one transaction.

Parquet on disk, not memory, so that a tenant of any size is staged in bounded memory; not the warehouse
itself, so that a run that never commits leaves the warehouse untouched and holds no lock while it reads
the service for minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import pyarrow as pa

from models.base import is_uuid
from models.errors import AuthoritySyncError
from warehouse.arrow_batches import arrow_batch
from warehouse.rows import Row, TableRows
from warehouse.runs import Progress
from warehouse.schema import staging_schema

# pyarrow.parquet and pyarrow.compute are imported where used: commands that write no Parquet (`hr plan`)
# then do without their 15 MB.
if TYPE_CHECKING:
    import pyarrow.parquet as pq

RAW = "raw"
"""The column of each record's (and each item's) JSON as the service sent it: most of a row's bytes."""
BATCH_ROWS = 2_000
"""Rows buffered per table before they are written as one Arrow batch (bounds memory)."""


def staging_dir(root: Path, run_id: str, tenant_id: str) -> Path:
    """Where one run stages one tenant's data."""
    return root / run_id / tenant_id


class StagingError(AuthoritySyncError, OSError):
    """Staging could not be written (a full disk, a folder that cannot be created); names the folder."""


@dataclass
class StagingWriter:
    """Streams rows of several tables into ``<dir>/<table>.parquet`` in Arrow batches."""

    directory: Path
    counts: dict[str, int] = field(default_factory=dict)
    _buffers: dict[str, list[Row]] = field(default_factory=dict)
    _writers: dict[str, pq.ParquetWriter] = field(default_factory=dict)

    def __enter__(self) -> StagingWriter:
        # Arrow's buffers come from the process's pool, malloc's where the process began in `pipelines`
        # (`pipelines.process_memory`): mimalloc kept what each staging thread freed.
        self.directory.mkdir(parents=True, exist_ok=True)
        return self

    def add(self, rows: TableRows) -> None:
        """Buffer the rows of one record; flush a table when its buffer is full. The writer takes the rows:
        once written, they have given up their ``raw`` (`_texts_apart`)."""
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

    def replace(self, keys: Mapping[str, str], records: Sequence[TableRows]) -> None:
        """Stage ``records`` (each the rows of one record) in place of the rows staged before for the same
        records: in each table of ``keys`` (table -> the column holding the record's id), rows whose
        column names one of their ids are dropped first. For the few records a list met again, newer."""
        replaced = {row[keys[table]] for rows in records for table, found in rows.items() for row in found}
        if not replaced:
            return
        for table, column in keys.items():
            self._flush(table)
            writer = self._writers.pop(table, None)
            if writer is None:
                continue
            writer.close()
            self._rewrite_without(table, column, replaced)
        for rows in records:
            self.add(rows)

    def _rewrite_without(self, table: str, column: str, replaced: set[object]) -> None:
        """Rewrite ``table``'s staged file without the rows whose ``column`` is in ``replaced``, batch by
        batch, leaving its writer open for the rows that follow."""
        import pyarrow.compute as pc

        ids = pa.schema([pa.field("id", pa.string())])
        replaced_ids = arrow_batch([{"id": value} for value in sorted(map(str, replaced))], ids).column(0)
        writer, batches = _rewritten(self.directory, table)
        self._writers[table] = writer
        for batch in batches:
            kept = batch.filter(pc.invert(pc.is_in(batch.column(column), value_set=replaced_ids)))
            self.counts[table] -= batch.num_rows - kept.num_rows
            writer.write_batch(kept)

    def _flush(self, table: str) -> None:
        import pyarrow.parquet as pq

        schema, rows = staging_schema(table), self._buffers[table]
        try:
            writer = self._writers.get(table)
            if writer is None:
                writer = pq.ParquetWriter(self.directory / f"{table}.parquet", schema)
                self._writers[table] = writer
            writer.write_table(arrow_batch(rows, schema, _texts_apart(rows, schema)))
        except OSError as error:  # a full disk: Arrow's message names no file
            raise StagingError(
                f"could not write {table} to the staging folder {self.directory}: {error}"
            ) from error
        self._buffers[table] = []

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            for table in list(self._buffers):
                self._flush(table)
        for writer in self._writers.values():
            writer.close()


def _rewritten(directory: Path, table: str) -> tuple[pq.ParquetWriter, Iterator[pa.RecordBatch]]:
    """A new writer of ``table``'s staged file, and the batches the file held (read from a copy set aside,
    removed once they are read)."""
    import pyarrow.parquet as pq

    path = directory / f"{table}.parquet"
    aside = path.with_name(f".{table}.old.parquet")
    path.replace(aside)

    def held() -> Iterator[pa.RecordBatch]:
        yield from pq.ParquetFile(aside).iter_batches(BATCH_ROWS)
        aside.unlink()

    return pq.ParquetWriter(path, staging_schema(table)), held()


def append_staged(directory: Path, table: str, batches: Iterable[pa.RecordBatch]) -> int:
    """Add ``batches`` (in the table's staged schema) to ``table``'s staged file, whose rows stay; returns
    the rows added. For rows staged from the warehouse after the list's read (`warehouse.unchanged`)."""
    added = 0
    try:
        writer, held = _rewritten(directory, table)
        with writer:
            for batch in held:
                writer.write_batch(batch)
            for batch in batches:
                writer.write_batch(batch)
                added += batch.num_rows
    except OSError as error:  # a full disk: Arrow's message names no file
        raise StagingError(f"could not write {table} to the staging folder {directory}: {error}") from error
    return added


def _texts_apart(rows: list[Row], schema: pa.Schema) -> dict[str, list[str | None]]:
    """The ``raw`` texts of buffered ``rows``, taken out of them (the writer owns its buffers, and the rows
    are dropped once written) to be laid into Arrow directly (`warehouse.arrow_batches`)."""
    return {RAW: [row.pop(RAW, None) for row in rows]} if RAW in schema.names else {}


def staged_tables(directory: Path) -> dict[str, Path]:
    """The staged Parquet file of each table."""
    return {path.stem: path for path in sorted(directory.glob("*.parquet"))}


def discard(directory: Path) -> None:
    """Remove a run's staging (it holds personal data) and its run folder once empty."""
    shutil.rmtree(directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        directory.parent.rmdir()


PROGRESS_FILE = "progress.json"
"""What a run has spent so far, in its staging folder: the record of a run that gets killed."""


class ProgressFile:
    """A run's progress report, rewritten in place before each request it sends: one ``pwrite`` of a few
    hundred bytes to the page cache (microseconds), which a killed process leaves whole. The report only
    grows (its counts only rise), so the rest of the file never holds an older tail; padding covers the
    rare shorter one. The file appears with the first report: a run killed before it sent anything leaves
    none."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / PROGRESS_FILE
        self._fd: int | None = None
        self._size = 0

    def __enter__(self) -> ProgressFile:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def write(self, progress: Progress) -> None:
        """Report the run's spending so far."""
        body = {
            "api_calls": progress.api_calls,
            "rate_limited": progress.rate_limited,
            "retries": progress.retries,
            "at": progress.at.isoformat(),
        }
        text = json.dumps(body).encode().ljust(self._size)  # spaces after JSON are JSON still
        if self._fd is None:
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.pwrite(self._fd, text, 0)
        self._size = len(text)


def leftover_progress(root: Path, tenant_id: str) -> dict[str, Progress]:
    """Run id -> the last progress report of each run of the tenant whose staging is still there (runs
    that were killed, when read holding the tenant's lock). A report that cannot be read is skipped."""
    found = {}
    for path in root.glob(f"*/{tenant_id}/{PROGRESS_FILE}") if is_uuid(tenant_id) else []:
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            found[path.parent.parent.name] = Progress(
                {str(k): int(v) for k, v in body["api_calls"].items()},
                int(body["rate_limited"]),
                int(body["retries"]),
                datetime.fromisoformat(body["at"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return found


def clean_leftovers(root: Path, tenant_id: str) -> list[Path]:
    """Remove the tenant's staging left behind by runs that were killed; returns what was removed. Call
    it only while holding the tenant's lock: then no other run of the tenant can be staging."""
    if not is_uuid(tenant_id):  # a tenant id names folders here: "*" or ".." must never reach the glob
        raise ValueError(f"not a tenant id: {tenant_id!r}")
    leftovers = sorted(path for path in root.glob(f"*/{tenant_id}") if path.is_dir())
    for path in leftovers:
        discard(path)
    return leftovers


def resume_dir(root: Path, tenant_id: str) -> Path:
    """Where a tenant's runs keep what the next run may reuse (beside the run folders, never among them:
    `clean_leftovers` must not take it for a killed run's staging)."""
    if not is_uuid(tenant_id):
        raise ValueError(f"not a tenant id: {tenant_id!r}")
    return root / f"resume-{tenant_id}"


class RevisionJournal:
    """The revision lists (E11 or E12) a tenant's runs fetched since its last commit, one JSON line each:
    parent id, the stamp of the owner record that named it (its content hash), what the service answered
    and when.

    A run that fails or is killed leaves it; a later run reuses an answer fetched within ``max_age`` whose
    owner still has the same stamp, instead of asking again, and a commit removes the journal
    (`forget_resume`).
    Lines are flushed one by one, so a kill loses at most the line being written (a torn last line is
    skipped on reading)."""

    def __init__(self, folder: Path, kind: str, max_age: timedelta) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{kind}-revisions.jsonl"
        self._known = self._load(max_age)
        self._file = self.path.open("a", encoding="utf-8")
        self.reused = 0

    def _load(self, max_age: timedelta) -> dict[str, tuple[str, list[str] | None]]:
        """The answers fetched within ``max_age``, by parent id (the latest answer of a parent wins)."""
        if not self.path.exists():
            return {}
        oldest = datetime.now(UTC) - max_age
        known = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                if datetime.fromisoformat(entry["at"]) >= oldest:
                    known[str(entry["id"])] = (str(entry["stamp"]), entry["ids"])
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a kill
        return known

    def answer(self, parent_id: str, stamp: str) -> tuple[bool, list[str] | None]:
        """``(True, ids)`` when an earlier attempt fetched this parent while its owner had this stamp
        (``ids`` None for a 404), else ``(False, None)``."""
        found = self._known.get(parent_id)
        if found is None or found[0] != stamp:
            return False, None
        self.reused += 1
        return True, found[1]

    def note(self, parent_id: str, stamp: str, ids: list[str] | None) -> None:
        """Keep one answer of the service (from the one thread that stages the revisions)."""
        entry = {"id": parent_id, "stamp": stamp, "ids": ids, "at": datetime.now(UTC).isoformat()}
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Stop writing (the journal stays for the next run until a commit removes it)."""
        self._file.close()


def forget_resume(root: Path, tenant_id: str) -> None:
    """Remove what a tenant's runs kept for resuming: a run committed, so nothing of it is needed."""
    shutil.rmtree(resume_dir(root, tenant_id), ignore_errors=True)
