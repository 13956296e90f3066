"""Commit one tenant's staged run: one transaction merges every staged table, moves the extract cursors
and records the run in ``sync_runs``. Any error rolls everything back: the warehouse stays as it was.

Writers take turns: the commit holds the warehouse's writer lock (`warehouse.locks`) and waits a bounded
time for it, and for DuckDB's own file lock (an analyst's session, say), before giving up with a message
naming the holder.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from models.errors import AuthoritySyncError
from resources.waits import SharedWait
from warehouse.catalog import FAMILIES, REVISIONS, RevisionList
from warehouse.changes import record_changes
from warehouse.db import ConfigValue, leased, open_database
from warehouse.digest_scheme import redigest_if_stale
from warehouse.empty import STORAGE_VERSION, place
from warehouse.files import default_publish_path
from warehouse.locks import LockBusyError, file_holder_error, held, writer_lock_path
from warehouse.merge import (
    Counts,
    MergeContext,
    constraint_failure,
    held_tables,
    load_staged,
    merge_family,
    merge_revision_checks,
    merge_revisions,
    merged_tables,
    prune_orphan_revisions,
    record_rechecks,
)
from warehouse.migrate import OlderWarehouseError, migrate, pending, up_to_date
from warehouse.publish import Published, publish_run, readable_as, try_publish
from warehouse.publish_target import PublishTarget
from warehouse.read_modes import FULL, INCREMENTAL
from warehouse.reads import RunStart, TenantSizes, run_start, sizes_of, tables_of
from warehouse.rehash import rehash_if_stale
from warehouse.runs import (
    RUNS_TABLE,
    Progress,
    QuotaProjection,
    RunRecord,
    RunStatus,
    insert_run,
    mark_killed,
    project_quota,
    table_rows,
    update_after_commit,
)
from warehouse.staging import staged_tables
from warehouse.unchanged import stored_digests

# pyarrow.parquet and pyarrow.compute are imported where used: commands that write no Parquet (`hr plan`)
# then do without their 15 MB.
logger = logging.getLogger(__name__)

MEMORY_LIMIT_MB = 128
MEMORY_LIMIT = f"{MEMORY_LIMIT_MB}MB"
"""DuckDB's buffer for a commit. Its default (80% of the machine) lets a full refresh hold every staged
table in memory (2.7 GB at 100,000 decisions); bounded, the merge spills to a temporary folder beside
the warehouse instead, so the run's memory stays flat as the tenant grows (for about 30% more commit time).
What DuckDB cannot spill (the primary-key indexes, each thread's buffer of rows being inserted) grows with
the tenant: see `COMMIT_BUFFERS`."""
MEMORY_LIMIT_BYTES = MEMORY_LIMIT_MB * 2**20


@dataclass(frozen=True)
class CommitBuffer:
    """DuckDB's buffer for one attempt at a commit: its bound (None: DuckDB's default, most of the
    machine) and its worker threads (None: one per core)."""

    memory_limit: str | None
    threads: int | None = None

    def __str__(self) -> str:
        if self.threads is None:
            threads = "a thread per core"
        else:
            threads = f"{self.threads} thread{'s' if self.threads > 1 else ''}"
        return f"{self.memory_limit or 'an unbounded buffer'} on {threads}"


BOUNDED = CommitBuffer(MEMORY_LIMIT)
ONE_THREAD = CommitBuffer(MEMORY_LIMIT, threads=1)
LARGER = CommitBuffer("256MB", threads=1)
UNBOUNDED = CommitBuffer(None)
COMMIT_BUFFERS = (BOUNDED, ONE_THREAD, LARGER, UNBOUNDED)
"""The buffers a commit tries in turn, each after the one before ran out of memory (the transaction rolls
back, so nothing is committed twice). Each thread pins rows it is inserting: a first full refresh of
100,000 decisions ran out of 128 MB on two threads and committed within it on one (process peak 340 MB
where the unbounded retry took 2.7 GB, commit 44 s against 17 s lost plus 33 s). What cannot spill (the
primary-key indexes) grows with the tenant: at 300,000 decisions 128 MB on one thread ran out too, and the
unbounded retry took 4.8 GB; 256 MB on one thread committed it (process peak 474 MB, 111 s; 512 MB: 723 MB,
90 s). Unbounded is the last resort; every retry is a warning of the run."""

RETRIED = "the commit needed more memory than"
"""How the warning of a commit tried again with a larger buffer begins, in the run's row and log."""

POLL_S = 0.2


class StagingMismatchError(AuthoritySyncError, RuntimeError):
    """The staging folder does not hold what this run's extract reported: it is never committed."""


@dataclass(frozen=True)
class StagedRun:
    """What one run staged, as its extract reported it (in memory, never read back from the folder)."""

    staging: Path
    tables: dict[str, int]
    """Table -> rows staged."""
    modes: dict[str, str]
    """Entity -> full, incremental or dependent."""
    cursors: Mapping[str, str | None] = field(default_factory=dict)
    """Entity -> the newest updated-at seen (ISO), moved on commit; None clears the entity's cursor (its
    next read is whole)."""
    vanished: dict[str, list[str]] = field(default_factory=dict)
    """Entity -> ids its read found removed from the list while it was read: marked deleted."""
    held_records: int | None = None
    """Live records of the tenant's paged lists when the run began (None: not known): none means the commit
    inserts every row it merges (`buffers_for`)."""


@dataclass(frozen=True)
class CommitResult:
    """What the commit changed and what the tables hold afterwards, for the tenant."""

    row_counts: dict[str, Counts]
    table_rows: dict[str, int]
    sizes: TenantSizes | None
    """The tenant's sizes as committed (what its next runs cost: `warehouse.reads.sizes_of`)."""
    published: Published | None = None
    """How the reader copy's publish went (None when none was asked for)."""


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    """`connected`'s connection with its defaults, for the caller to close: the tests' and tools' way to
    open the warehouse (creating it if needed) with its schema up to date; the product's writes use
    `connected`, which borrows a warm instance."""
    opener: _Opener = lambda config: open_database(path, config=config)  # noqa: E731 - one use
    return _opened(opener, path, MEMORY_LIMIT, 0.0, None, True, None)


@contextmanager
def connected(
    path: Path,
    memory_limit: str | None = MEMORY_LIMIT,
    wait_s: float = 0.0,
    readers_copy: Path | None = None,
    upgrade: bool = True,
    threads: int | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """For the block, the warehouse file (created if needed) with its schema up to date, on a warm instance
    of the process (`warehouse.db.leased`: a quarter of the cost of opening the file), released when the
    block ends. Waits up to ``wait_s`` while another process holds DuckDB's lock on it (then fails with that
    process's pid and program, and the copy its readers belong on: ``readers_copy``, by default the one
    beside the warehouse); ``memory_limit`` bounds DuckDB's buffer, ``threads`` its workers (None: one per
    core). Without ``upgrade``, a file an earlier release wrote is refused (`OlderWarehouseError`, naming
    ``authority-sync warehouse upgrade``) instead of migrated."""
    with ExitStack() as stack:
        opener: _Opener = lambda config: stack.enter_context(leased(path, config))  # noqa: E731 - one use
        yield _opened(opener, path, memory_limit, wait_s, readers_copy, upgrade, threads)


_Opener = Callable[[dict[str, ConfigValue]], duckdb.DuckDBPyConnection]
"""Opens the warehouse for writing with DuckDB settings (`connect`'s or `connected`'s way)."""


def _opened(
    opener: _Opener,
    path: Path,
    memory_limit: str | None,
    wait_s: float,
    readers_copy: Path | None,
    upgrade: bool,
    threads: int | None,
) -> duckdb.DuckDBPyConnection:
    """The body of `connected` (see there), opening the file with ``opener``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    config: dict[str, ConfigValue] = {"memory_limit": memory_limit} if memory_limit else {}
    if threads is not None:
        config["threads"] = threads
    if not path.exists() and not place(path):  # no empty warehouse shipped for this tree: DuckDB makes one
        config["storage_compatibility_version"] = STORAGE_VERSION
    wait = SharedWait(lambda: f"the warehouse {path}, opened by another process (up to {wait_s:g} s)")
    with wait.waiting():
        while True:
            try:
                con = opener(config)
                break
            except duckdb.IOException as error:
                if "lock" not in str(error).lower():
                    raise
                if time.monotonic() >= deadline:
                    copy = readers_copy or default_publish_path(path)
                    raise file_holder_error(path, str(error), copy, wait_s) from None
                wait.still()
                time.sleep(POLL_S)
    if up_to_date(con):  # what nearly every open finds: the checks below cost a dozen statements
        return con
    if not upgrade:
        _refuse_older(con, path)
    migrate(con)
    return con


def _refuse_older(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Close ``con`` and raise `OlderWarehouseError` when its file lacks migrations of this release."""
    missing = pending(con)
    if missing:
        con.close()
        raise OlderWarehouseError(
            f"the warehouse {path} was written by an earlier release (migrations {missing[0]}-{missing[-1]} "
            "not applied): upgrade it first with `authority-sync warehouse upgrade` (it keeps a copy of the "
            "file as it was)"
        )


Opener = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
"""Opens a short write of the warehouse (`writing` with its arguments bound): taken for each statement
of a long task, so that the file is never held across network calls."""


@contextmanager
def writing(
    warehouse: Path,
    holder: str,
    wait_s: float,
    memory_limit: str | None = MEMORY_LIMIT,
    upgrade: bool = True,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection of the warehouse's one writer: the writer lock held, DuckDB's lock awaited (``upgrade``:
    see `connected`)."""
    deadline = time.monotonic() + wait_s
    lock = held(writer_lock_path(warehouse), holder, wait_s, f"the warehouse {warehouse}")
    # The wait left for DuckDB's lock is taken once the writer lock is held (`with` enters in order).
    with lock, connected(warehouse, memory_limit, _left(deadline), upgrade=upgrade) as con:
        yield con


def commit_run(
    warehouse: Path,
    staged: StagedRun,
    record: RunRecord,
    wait_s: float,
    publish: PublishTarget | None = None,
    buffers: Sequence[CommitBuffer] | None = None,
) -> CommitResult:
    """Merge everything staged for the record's tenant in one transaction and add the run's row; then,
    when ``publish`` is given, publish the reader copy (a failed publish is a warning of the run).
    ``buffers``: the DuckDB buffers to try in turn (by default `buffers_for` the staging). The run's
    ``commit`` phase counts every attempt: a first one that ran out of memory is the commit's time too."""
    started = time.perf_counter()
    verify_staging(staged)
    attempts = tuple(buffers or buffers_for(staged))
    for buffer, larger in itertools.pairwise(attempts):
        try:
            return _commit(warehouse, staged, record, wait_s, buffer, publish, started)
        except duckdb.OutOfMemoryException:
            # The transaction rolled back, so nothing was written: once more with the next buffer. The run's
            # row keeps the warning: a commit that went unbounded may have taken most of the machine.
            warning = f"{RETRIED} {buffer} and was tried again with {larger}"
            logger.warning("run %s: %s", record.run_id, warning)
            record.warnings.append(warning)
    return _commit(warehouse, staged, record, wait_s, attempts[-1], publish, started)


FIRST_COMMIT_ONE_THREAD_FROM = MEMORY_LIMIT_BYTES // 8
"""Staged bytes from which a tenant's first commit (it held no records: every row is inserted) starts on
`ONE_THREAD`. Two threads ran out of `BOUNDED` on first full refreshes of 10,000 decisions (24 MB staged)
and 20,000 (43 MB; 1.9 s lost), and fit at 5,000 (11 MB). A second full refresh of the same 43 MB, which
inserts almost nothing, fits on two threads and is 0.7 s faster there than on one."""


FIRST_COMMIT_LARGER_FROM = 3 * MEMORY_LIMIT_BYTES
"""Staged bytes from which a tenant's first commit starts on `LARGER`: the primary-key indexes of every row
it inserts outgrow `ONE_THREAD`'s bound, and the transaction fails at its very end. A first full refresh
of 100,000 decisions (191 MB staged) committed within 128 MB on one thread; one of 300,000 (about 570 MB,
by proportion) ran out there and committed at 256 MB, a commit of 91-94 s, 77 s when it starts there
(docs/benchmarks.md, "Arrow's memory pool"). Two sizes measured: the bound lies between them."""


CHANGES_ONE_THREAD_FROM = MEMORY_LIMIT_BYTES // 16
"""Staged bytes of the lists read incrementally (`_changed_bytes`) from which a commit of a tenant it holds
starts on `ONE_THREAD`: each record such a read stages changed since the last run, so its rows are
inserted as they are in a first commit, beside a diff against every record the tenant holds. Of a tenant
of 100,000 decisions, a nightly after a 5% change (16 MB of such lists staged, 19 MB in all) ran out of
`BOUNDED` on two threads in the merge's insert of the changed decisions and committed on its second try
(commit 9.8 s, a warning in the run's row); started on one thread, it commits on its first (9.6 s). After
a 1% change (about 3 MB, by proportion) it fits on two. A second full refresh reads no list
incrementally: two threads."""


SMALL_COMMIT_BELOW = 2**20
"""Staged bytes under which a commit is small (`is_small`): it starts on `ONE_THREAD` and copies its
staged files into memory (`warehouse.merge.load_staged`). Each of its hundred-odd statements handles a few
rows, so it costs what DuckDB spends to bind it: a second thread only adds coordination, and a statement
that reads a Parquet view binds the file again. A small tenant's nightly (60 users, 150 decisions) took
0.12 s less CPU a sync for each of the two (1.31 s a sync before, 1.08 s with both; docs/benchmarks.md).
At 20,000 decisions neither gained (a bound of 64 MiB: 2.38 s of commit statements against 2.25 s)."""


def is_small(sizes: Mapping[str, int]) -> bool:
    """Whether staged files of these ``sizes`` (table -> bytes, `staged_sizes`) total under
    `SMALL_COMMIT_BELOW`."""
    return sum(sizes.values()) < SMALL_COMMIT_BELOW


def staged_sizes(files: Mapping[str, Path]) -> dict[str, int]:
    """The bytes of each staged file (``files``: table -> file, `staged_tables`)."""
    return {table: path.stat().st_size for table, path in files.items()}


def buffers_for(staged: StagedRun) -> tuple[CommitBuffer, ...]:
    """`COMMIT_BUFFERS`, from the one a commit of this size fits in as measured: the single-threaded one
    when the commit `is_small` or its staged files outweigh the bound, a tenant's first commit
    reaches `FIRST_COMMIT_ONE_THREAD_FROM` (such a commit runs out of it on more threads, and finding that
    out cost 17 s at 100,000 decisions), or the lists read incrementally reach `CHANGES_ONE_THREAD_FROM`;
    `LARGER` when a first commit reaches `FIRST_COMMIT_LARGER_FROM`."""
    sizes = staged_sizes(staged_tables(staged.staging))
    staged_bytes = sum(sizes.values())
    first = staged.held_records == 0
    if first and staged_bytes >= FIRST_COMMIT_LARGER_FROM:
        return COMMIT_BUFFERS[COMMIT_BUFFERS.index(LARGER) :]
    if (
        is_small(sizes)
        or (first and staged_bytes >= FIRST_COMMIT_ONE_THREAD_FROM)
        or _changed_bytes(staged, sizes) >= CHANGES_ONE_THREAD_FROM
        or staged_bytes > MEMORY_LIMIT_BYTES
    ):
        return COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    return COMMIT_BUFFERS


def _changed_bytes(staged: StagedRun, sizes: Mapping[str, int]) -> int:
    """The staged bytes (``sizes``: table -> bytes) of the families whose list the run read incrementally:
    records changed since the last run, each a version the commit inserts."""
    return sum(
        sizes.get(table, 0)
        for name, family in FAMILIES.items()
        if staged.modes.get(name) == INCREMENTAL
        for table in family.tables
    )


def verify_staging(staged: StagedRun) -> None:
    """Every table the extract reported is staged with exactly its rows, and nothing else is staged."""
    import pyarrow.parquet as pq

    found = staged_tables(staged.staging)
    if set(found) != set(staged.tables):
        raise StagingMismatchError(
            f"staging {staged.staging} holds {sorted(found)}, the extract reported {sorted(staged.tables)}"
        )
    for table, rows in staged.tables.items():
        on_disk = pq.ParquetFile(found[table]).metadata.num_rows
        if on_disk != rows:
            raise StagingMismatchError(f"staged {table} holds {on_disk} rows, the extract reported {rows}")


def _commit(
    warehouse: Path,
    staged: StagedRun,
    record: RunRecord,
    wait_s: float,
    buffer: CommitBuffer,
    publish: PublishTarget | None,
    started: float,
) -> CommitResult:
    """One attempt of `commit_run`, which began at ``started`` (`time.perf_counter`)."""
    deadline = time.monotonic() + wait_s
    with held(writer_lock_path(warehouse), f"run {record.run_id}", wait_s, f"the warehouse {warehouse}"):
        copy = publish.path if publish is not None else None
        with connected(warehouse, buffer.memory_limit, _left(deadline), copy, threads=buffer.threads) as con:
            con.begin()
            try:
                now = datetime.now(UTC)
                record.row_counts = _merge_all(con, staged, record, now)
                record_changes(
                    con, record.tenant_id, record.run_id, now, _revisions_changed(record.row_counts)
                )
                _move_cursors(con, staged.cursors, record)
                record.status, record.finished_at, record.error = RunStatus.SUCCEEDED, now, None
                insert_run(con, record)
                existing = tables_of(con)
                counts = table_rows(con, record.tenant_id, _counted(existing, staged.tables))
                sizes = sizes_of(con, record.tenant_id, tables=existing)
                con.commit()
            except BaseException:
                # The row says succeeded only if the COMMIT did: a failed one (a full disk) is a failure.
                record.status, record.finished_at = RunStatus.FAILED, None
                _roll_back(con)
                raise
            _checkpoint(con, record)
            record.phase_seconds["commit"] = round(time.perf_counter() - started, 3)
            rebuilt = _rebuilds(warehouse, publish)
            published = None if rebuilt else _publish_committed(con, record, publish)
        if publish is not None and rebuilt:
            published = _publish_rebuilt(warehouse, record, publish, deadline)
    return CommitResult(record.row_counts, counts, sizes, published)


def _roll_back(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back what is left of the transaction: a failed COMMIT has already ended it, and the error to
    report is the COMMIT's, not "no transaction is active"."""
    try:
        con.rollback()
    except duckdb.TransactionException:
        logger.debug("nothing to roll back: the transaction ended with its failed COMMIT")


def _checkpoint(con: duckdb.DuckDBPyConnection, record: RunRecord) -> None:
    """Write what the COMMIT made durable in the WAL into the file itself (DuckDB's checkpoint, a good
    part of a commit's time, counted in it). The run is committed: a failure is only logged, and the
    publish's own CHECKPOINT or the connection's close tries again."""
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error as error:
        logger.warning("could not checkpoint the commit of run %s: %s", record.run_id, error)


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _publish_committed(
    con: duckdb.DuckDBPyConnection, record: RunRecord, publish: PublishTarget | None
) -> Published | None:
    """Publish the state just committed on ``con`` and store the run's late figures (its commit's time,
    the publish's time or warning), still under the writer lock: the copy is exactly the state just
    committed (no other writer can slip in between), and publishes take turns with commits, so an older
    state never replaces a newer one. On the commit's own connection, whose checkpoint the byte copy needs
    anyway: a second connection paid a second open and checkpoint. It never raises: the run is committed,
    and the OutOfMemory retry of `commit_run` must not commit it twice."""
    try:
        published = publish_run(con, publish, record) if publish is not None else None
        _store_late(con, record)
    except duckdb.Error as error:
        logger.warning("could not store the timings of run %s or publish it: %s", record.run_id, error)
        return None
    return published


def _rebuilds(warehouse: Path, publish: PublishTarget | None) -> bool:
    """Whether the publish rebuilds the copy (``COPY FROM DATABASE``) rather than copying the file. The run
    is committed: a header that cannot be read is the publish's to report (as its warning), not the run's."""
    try:
        return publish is not None and not readable_as(warehouse, publish.storage_version)
    except OSError:
        return False


def _publish_rebuilt(
    warehouse: Path, record: RunRecord, publish: PublishTarget, deadline: float
) -> Published | None:
    """`_publish_committed` on a connection of its own, for a copy DuckDB rebuilds (``COPY FROM
    DATABASE``, the warehouse's storage format being newer than the readers'): building the copy's indexes
    in what the merge's pages left of the commit's bounded buffer ran out of memory."""
    try:
        with connected(warehouse, MEMORY_LIMIT, _left(deadline)) as con:
            return _publish_committed(con, record, publish)
    except (duckdb.Error, LockBusyError) as error:
        logger.warning("could not store the timings of run %s or publish it: %s", record.run_id, error)
        return None


def _store_late(con: duckdb.DuckDBPyConnection, record: RunRecord) -> None:
    """Store what the committed run learnt afterwards (timings, a publish warning); the run is committed,
    so a failure here is only logged."""
    try:
        update_after_commit(con, record)
    except duckdb.Error as error:
        logger.warning("could not store the timings and warnings of run %s: %s", record.run_id, error)


@dataclass(frozen=True)
class StartedRun:
    """What a run learnt as its row was written: the killed runs it marked, where the tenant's month of
    API calls stands with it, and what the committed warehouse says about how to read (`RunStart`)."""

    killed: list[str]
    projection: QuotaProjection
    start: RunStart
    unchanged: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per list the run may stage again unchanged: id -> MD5 of the stored text (`warehouse.unchanged`)."""


def start_run(
    warehouse: Path,
    record: RunRecord,
    killed: dict[str, Progress],
    wait_s: float,
    quota: tuple[int, float],
    recheck_days: int,
    reusing: Callable[[RunStart], frozenset[str]] | None = None,
) -> StartedRun:
    """Mark the tenant's runs that were killed (``killed``: what their staging last reported), then write
    this run's row as ``running``, in one small transaction; then project the month's calls with the run
    (``quota``: the monthly quota and the share of it runs may use) and read the run's `RunStart`
    (``recheck_days``: the re-verification's cycle) and, for the lists ``reusing`` names from it, the digests
    of the records whose stored rows the run may stage again (under the record's ``derivation``), on the
    same connection, since each open of the file costs tens of milliseconds. Call it holding the tenant's
    lock, which keeps what it read as it is until the run commits."""
    record.status = RunStatus.RUNNING
    with writing(warehouse, f"run {record.run_id}", wait_s) as con:
        con.begin()
        now = datetime.now(UTC)
        ended = mark_killed(con, record.tenant_id, killed, now)
        insert_run(con, record)
        con.commit()
        projection = project_quota(con, record.tenant_id, record.mode, *quota, now)
        start = run_start(con, record.tenant_id, recheck_days, now)
        lists = reusing(start) if reusing is not None and record.derivation else frozenset()
        unchanged = stored_digests(con, record.tenant_id, str(record.derivation), lists) if lists else {}
    return StartedRun(ended, projection, start, unchanged)


def record_unfinished(
    warehouse: Path, record: RunRecord, wait_s: float, publish: PublishTarget | None = None
) -> bool:
    """Rewrite the row of a run that did not commit, in a transaction of its own, then (with ``publish``)
    publish the copy again, still as the writer: the row is all that changed since the last publish, and
    readers see that the last run failed. Returns False (and logs) when even the row cannot be written: the
    run's own error matters more (a failed publish is only logged: readers keep the previous copy)."""
    record.finished_at = record.finished_at or datetime.now(UTC)
    if record.status is RunStatus.RUNNING:
        record.status = RunStatus.FAILED
    try:
        with writing(warehouse, f"run {record.run_id}", wait_s) as con:
            con.begin()  # the row is deleted and written again: both or neither
            try:
                insert_run(con, record)
                con.commit()
            except BaseException:
                _roll_back(con)
                raise
            if publish is not None:
                try_publish(con, publish, record.run_id)
    except (duckdb.Error, LockBusyError, OSError) as error:
        logger.warning("could not record run %s in sync_runs: %s", record.run_id, error)
        return False
    return True


def _counted(existing: frozenset[str], staged: Iterable[str]) -> list[str]:
    """The tables whose rows a commit counts for the tenant: the staged ones, their histories and the runs
    (``existing``: the warehouse's tables)."""
    histories = [f"{table}_history" for table in staged if f"{table}_history" in existing]
    return sorted({*staged, *histories, RUNS_TABLE})


def _merge_all(
    con: duckdb.DuckDBPyConnection, staged: StagedRun, record: RunRecord, now: datetime
) -> dict[str, Counts]:
    rehashed = rehash_if_stale(con)
    if rehashed:
        logger.info("computed the content hashes of %d stored records again (a new definition)", rehashed)
    redigested = redigest_if_stale(con)
    if redigested:
        logger.info("computed the digests of %d stored rows again (another digest scheme)", redigested)
    files = staged_tables(staged.staging)
    load_staged(con, files, copied=is_small(staged_sizes(files)))
    try:
        return _merge_staged(con, staged, record, now, set(files))
    except duckdb.ConstraintException as error:
        raise constraint_failure(files, error) from None


def _merge_staged(
    con: duckdb.DuckDBPyConnection, staged: StagedRun, record: RunRecord, now: datetime, files: set[str]
) -> dict[str, Counts]:
    counts: dict[str, Counts] = {}
    tenant, run_id = record.tenant_id, record.run_id
    held = held_tables(con, tenant, merged_tables(files))
    for name, family in FAMILIES.items():
        if family.root in files:
            full = staged.modes.get(name, FULL) == FULL
            vanished = tuple(staged.vanished.get(name, ()))
            ctx = MergeContext(con, tenant, run_id, now, full, vanished, held)
            counts |= merge_family(ctx, family, files)
    ctx = MergeContext(con, tenant, run_id, now, full=False, held=held)
    if "revision_checks" in files:
        _note_rechecks(record, *record_rechecks(ctx))
    for table in REVISIONS:
        if table in files:
            counts[table] = merge_revisions(ctx, table, "revision_checks" in files)
    if "revision_checks" in files:
        merge_revision_checks(ctx)
    for table, revisions in REVISIONS.items():
        if _prunes(staged, revisions):
            pruned = prune_orphan_revisions(ctx, table)
            counts.setdefault(table, {"inserted": 0, "updated": 0, "unchanged": 0, "deleted": 0})
            counts[table]["deleted"] += pruned
    return counts


def _prunes(staged: StagedRun, revisions: RevisionList) -> bool:
    """Whether the commit drops the revision lists left orphan: after a full read of the list naming them."""
    return staged.modes.get(revisions.named_by.name) == FULL


def _revisions_changed(counts: Mapping[str, Counts]) -> list[str]:
    """The revision tables in which the commit added, moved or dropped an id of a list (pruned lists
    included): only their histories can need a version. A list that stayed as it was is as its history
    holds it (every commit brings the history up to the lists; migration 43 started it from them)."""
    return [
        table
        for table in REVISIONS
        if any(counts.get(table, {}).get(kind) for kind in ("inserted", "updated", "deleted"))
    ]


def _note_rechecks(record: RunRecord, rechecked: int, found_new: int) -> None:
    """The run's re-verifications, and a warning when some found revisions the owner's record never
    announced: the evidence for verifying more often."""
    record.revisions_rechecked, record.rechecks_found_new = rechecked, found_new
    warning = (
        f"{found_new} of {rechecked} revision list(s) re-verified held revision ids the warehouse did not "
        f"have, added without a change of their delegation or decision (see revision_rechecks); they are "
        f"found within ADM_REVISION_RECHECK_DAYS ({record.recheck_days}) runs, fewer days find them sooner"
    )
    # A commit run again (unbounded, after running out of its buffer) must not say it twice.
    if found_new and warning not in record.warnings:
        record.warnings.append(warning)


def _move_cursors(
    con: duckdb.DuckDBPyConnection, cursors: Mapping[str, str | None], record: RunRecord
) -> None:
    """Replace the tenant's cursors of the lists in ``cursors`` (None: the list's cursor is forgotten) in
    two statements whatever their number: an ``INSERT OR REPLACE`` a list cost about 5 ms each."""
    if not cursors:
        return
    con.execute(
        "DELETE FROM extract_cursors WHERE tenant_id = ? AND list_contains(?::VARCHAR[], entity)",
        [record.tenant_id, list(cursors)],
    )
    moved = {entity: cursor for entity, cursor in cursors.items() if cursor is not None}
    if moved:
        con.execute(
            "INSERT INTO extract_cursors "
            "SELECT ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[])::TIMESTAMPTZ, ?",
            [record.tenant_id, list(moved), list(moved.values()), record.run_id],
        )
