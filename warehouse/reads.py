"""Read-only looks at the committed warehouse, used while a run is still extracting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from models.errors import AuthoritySyncError
from resources.waits import SharedWait
from warehouse.catalog import LISTS, REVISIONS, RevisionList, revisions_of_kind
from warehouse.db import leased, open_database
from warehouse.files import default_publish_path
from warehouse.locks import DEFAULT_LOCK_WAIT_S, busy_error, holder_of, writer_lock_path

_MAGIC = b"DUCK"
"""What a DuckDB database file holds at bytes 8..12."""


def warehouse_problem(path: Path) -> str | None:
    """Why ``path`` cannot be the warehouse (a folder, a file that is not a DuckDB database, a folder
    path through a file), or None: it is a DuckDB file or can become one."""
    if path.is_dir():
        return f"{path} is a folder, not a DuckDB file"
    if path.is_file():
        with path.open("rb") as file:
            head = file.read(12)
        if len(head) and head[8:12] != _MAGIC:
            return f"{path} is not a DuckDB database file"
        return None
    parent = next((folder for folder in path.parents if folder.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"{parent} is a file, so {path} cannot be created"
    return None


def _locked(error: BaseException) -> bool:
    # Only another process's lock is worth waiting for; "Is a directory" or "not a valid DuckDB
    # database" will not change in a minute.
    return isinstance(error, duckdb.IOException) and "lock" in str(error).lower()


class WriterHoldsFileError(AuthoritySyncError):
    """A reader opened a file its writer holds (the warehouse during a commit or an HR step)."""


def open_for_reader(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection for a reader (an analyst, a script), at once. A file its writer holds is
    refused in one line naming the holder and the copy for readers to open instead (DuckDB's own hint, to
    open it read-only, is what the reader did). Instants show in the process's time zone, or in UTC where
    Python cannot convert to it (`warehouse.db`)."""
    try:
        return open_database(path, read_only=True, process_zone=True)
    except duckdb.IOException as error:
        if not _locked(error):
            raise
        holder = holder_of(writer_lock_path(path))
        raise WriterHoldsFileError(
            f"{path} is being written by {holder}: readers open the copy published for them, "
            f"{default_publish_path(path)} (authority-sync sql and pipelines.analytics.connect() read it by "
            "default), which no write holds"
        ) from None


@contextmanager
def read_only(path: Path, wait_s: float = DEFAULT_LOCK_WAIT_S) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A read-only connection for the block (on a warm instance: `warehouse.db.leased`), or None when no
    warehouse exists yet. Waits up to ``wait_s`` while another process holds the write lock (a commit of
    another tenant, say), then raises `LockBusyError` in one line naming the holder."""
    if not path.exists():
        yield None
        return
    with ExitStack() as block:
        yield _open(path, wait_s, block)


def _open(path: Path, wait_s: float, block: ExitStack) -> duckdb.DuckDBPyConnection:
    """``path`` attached read-only until ``block`` ends, retried while another process holds its lock."""
    wait = SharedWait(lambda: f"the warehouse {path}, written by {holder_of(writer_lock_path(path))}")
    attempts = Retrying(
        retry=retry_if_exception(_locked),
        stop=stop_after_delay(wait_s),
        wait=wait_exponential(multiplier=0.1, max=2),
        before_sleep=lambda _: wait.still(),
        reraise=True,
    )
    try:
        with wait.waiting():
            return attempts(lambda: block.enter_context(leased(path, read_only=True)))
    except duckdb.IOException as error:
        if _locked(error):
            raise busy_error(path, wait_s) from None
        raise


def tables_of(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The tables of the connected database (one catalog read: each costs milliseconds, not microseconds)."""
    rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
    return frozenset(str(row[0]) for row in rows)


def _cursors(
    con: duckdb.DuckDBPyConnection, tenant_id: str, tables: frozenset[str]
) -> dict[str, datetime | None]:
    """The committed extract cursor of each entity of a tenant."""
    if "extract_cursors" not in tables:
        return {}
    rows = con.execute(
        "SELECT entity, cursor_value FROM extract_cursors WHERE tenant_id = ?", [tenant_id]
    ).fetchall()
    return {str(entity): value for entity, value in rows}


def _column_values(con: duckdb.DuckDBPyConnection, tenant_id: str, table: str, column: str) -> set[str]:
    """Distinct values of one column of a committed table, for one tenant."""
    rows = con.execute(
        f'SELECT DISTINCT "{column}" FROM "{table}" WHERE tenant_id = ?',  # noqa: S608 - fixed names
        [tenant_id],
    ).fetchall()
    return {str(row[0]) for row in rows if row[0] is not None}


@dataclass(frozen=True)
class RevisionPlan:
    """What the committed warehouse says about one kind of revision list (``delegation`` or ``document``)
    as a run starts: the lists it checked, the content hashes of the records owning them (a delegation; the
    decisions citing a document), and the lists the run checks whatever their owners say."""

    checked: frozenset[str] = frozenset()
    owner_hashes: frozenset[str] = frozenset()
    """A content hash covers its record's id, so a hash found here is that very record, unchanged."""
    never_checked: frozenset[str] = frozenset()
    """Live lists no committed run checked (a warehouse from before ``revision_checks`` knew only those
    with revisions)."""
    recheck: frozenset[str] = frozenset()
    """This run's share of the rolling re-verification (`revision_plans`)."""

    @property
    def due(self) -> frozenset[str]:
        """The lists the run checks whatever their owners say."""
        return self.never_checked | self.recheck


LIVE = "NOT coalesce(is_deleted, FALSE)"
"""A current row that is a live record (not marked deleted)."""


def _live_parents(revisions: RevisionList) -> str:
    """The lists of one kind worth verifying: those that the owner rows of live records name (the ids of
    live delegations, the documents live decisions cite). Table and column names are the catalog's."""
    root, owner, column = revisions.named_by.name, revisions.owner, revisions.owner_column
    if owner == root:
        return f"SELECT {column} AS parent_id FROM {root} WHERE tenant_id = $tenant AND {LIVE}"  # noqa: S608
    link = LISTS[root].family.parent_column(owner)
    joined = f"{owner} o JOIN {root} r ON r.tenant_id = o.tenant_id AND r.id = o.{link}"
    live = f"NOT coalesce(r.is_deleted, FALSE) AND trim(o.{column}) <> ''"
    return f"SELECT DISTINCT o.{column} AS parent_id FROM {joined} WHERE o.tenant_id = $tenant AND {live}"  # noqa: S608


def _owner_hashes(revisions: RevisionList) -> str:
    """The content hashes of the records whose owner rows name lists of one kind (the catalog's names)."""
    root, owner = revisions.named_by.name, revisions.owner
    hashes = f"SELECT content_hash FROM {root} WHERE tenant_id = $tenant"  # noqa: S608
    if owner == root:
        return hashes
    link = LISTS[root].family.parent_column(owner)
    return f"{hashes} AND id IN (SELECT {link} FROM {owner} WHERE tenant_id = $tenant)"  # noqa: S608


_LIVE_PARENTS = {revisions.kind: _live_parents(revisions) for revisions in REVISIONS.values()}
_OWNER_HASHES = {revisions.kind: _owner_hashes(revisions) for revisions in REVISIONS.values()}
# The r-th of N shares of K lists is ceil(K(r+1)/N) - ceil(Kr/N): N runs in a row re-check K lists in all,
# a tenant with fewer lists than N days re-checks one now and then rather than one every run, and the
# longest unverified go first, so every list is verified within N runs. A list unverified for N days (runs
# were missed) is due whatever its turn.
_RECHECK = """
WITH aged AS (
    SELECT live.parent_id, c.synced_at,
           row_number() OVER (ORDER BY c.synced_at NULLS FIRST, live.parent_id) AS place,
           count(*) OVER () AS known
    FROM ({live}) live JOIN revision_checks c
      ON c.tenant_id = $tenant AND c.parent_kind = $kind AND c.parent_id = live.parent_id
)
SELECT parent_id FROM aged
WHERE place <= (known * ($runs + 1) + $days - 1) // $days - (known * $runs + $days - 1) // $days
   OR synced_at < $overdue
"""
_CHECKED = "SELECT parent_id FROM revision_checks WHERE tenant_id = $tenant AND parent_kind = $kind"
_NEVER_CHECKED = """
SELECT parent_id FROM ({live}) live WHERE parent_id NOT IN
    (SELECT parent_id FROM revision_checks WHERE tenant_id = $tenant AND parent_kind = $kind)
"""


def revision_plans(
    con: duckdb.DuckDBPyConnection, tenant_id: str, recheck_days: int, now: datetime
) -> dict[str, RevisionPlan]:
    """The `RevisionPlan` of each kind of revision list for the tenant's next run, which re-checks about
    1/``recheck_days`` of the lists it would otherwise not ask for (see ``_RECHECK``)."""
    found = con.execute(
        "SELECT count(*) FROM sync_runs WHERE tenant_id = ? AND status = 'succeeded'", [tenant_id]
    ).fetchone()
    share: dict[str, object] = {"runs": int(found[0]) if found else 0, "days": recheck_days}
    share["overdue"] = now - timedelta(days=recheck_days)
    return {kind: _plan(con, tenant_id, kind, share) for kind in _LIVE_PARENTS}


def _plan(
    con: duckdb.DuckDBPyConnection, tenant_id: str, kind: str, share: dict[str, object]
) -> RevisionPlan:
    live = _LIVE_PARENTS[kind]
    parts = (_CHECKED, _OWNER_HASHES[kind], _NEVER_CHECKED.format(live=live), _RECHECK.format(live=live))
    # One statement for the four id sets (each a statement of its own cost about 5 ms to plan).
    lists = ", ".join(f"(SELECT list(value) FROM ({part}) AS found(value))" for part in parts)  # noqa: S608
    row = con.execute(f"SELECT {lists}", {"tenant": tenant_id, "kind": kind, **share}).fetchone()
    checked, owner_hashes, never_checked, recheck = (
        frozenset(str(value) for value in found or ()) for found in (row or (None,) * len(parts))
    )
    return RevisionPlan(checked, owner_hashes, never_checked, recheck)


def _checked_parents(
    con: duckdb.DuckDBPyConnection, tenant_id: str, kind: str, tables: frozenset[str]
) -> set[str]:
    """The delegations or documents (``kind``) whose revision list a committed run checked; a warehouse
    from before ``revision_checks`` knows only those with revisions."""
    if "revision_checks" not in tables:
        revisions = revisions_of_kind(kind)
        return _column_values(con, tenant_id, revisions.table, revisions.parent_column)
    rows = con.execute(
        "SELECT parent_id FROM revision_checks WHERE tenant_id = ? AND parent_kind = ?", [tenant_id, kind]
    ).fetchall()
    return {str(row[0]) for row in rows}


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the connected database has ``table``."""
    return table in tables_of(con)


@dataclass(frozen=True)
class TenantSizes:
    """What one tenant's runs cost depends on, as the committed warehouse says it."""

    records: dict[str, int]
    """Live records of each list (those a full refresh pages through)."""
    revision_lists: dict[str, int]
    """Live revision lists of each kind (delegation, document): what the re-verification rotates over."""
    nightly_calls: list[dict[str, int]]
    """API calls per endpoint of the last few committed incremental runs, newest first."""
    nightly_rechecked: list[int]
    """Of those runs, the revision lists each re-verified (0 before migration 0030)."""


def tenant_sizes(
    path: Path, tenant_id: str, runs: int = 7, wait_s: float = DEFAULT_LOCK_WAIT_S
) -> TenantSizes | None:
    """The sizes of ``tenant_id`` in the warehouse at ``path`` (None: no such warehouse), see `sizes_of`."""
    with read_only(path, wait_s) as con:
        return sizes_of(con, tenant_id, runs) if con is not None else None


def sizes_of(
    con: duckdb.DuckDBPyConnection, tenant_id: str, runs: int = 7, tables: frozenset[str] | None = None
) -> TenantSizes | None:
    """The sizes of ``tenant_id`` in the connected warehouse (None: one no sync has written): live records
    of each paged list (its root table), live revision lists, and the calls of its last ``runs``
    incremental runs. ``tables``: the database's tables, when the caller has read them already."""
    tables = tables_of(con) if tables is None else tables
    if "sync_runs" not in tables:
        return None
    records = _live_records(con, tenant_id)
    revision_lists = {}
    for kind, live in _LIVE_PARENTS.items():
        found = con.execute(f"SELECT count(*) FROM ({live})", {"tenant": tenant_id}).fetchone()  # noqa: S608
        revision_lists[kind] = int(found[0]) if found else 0
    # A warehouse no sync has migrated past 0030 yet: its runs re-verified nothing.
    rechecked = "coalesce(revisions_rechecked, 0)" if "revision_rechecks" in tables else "0"
    nightly = con.execute(
        f"SELECT api_calls, {rechecked} FROM sync_runs WHERE tenant_id = ? "  # noqa: S608 - our SQL
        "AND mode = 'incremental' AND status = 'succeeded' ORDER BY finished_at DESC LIMIT ?",
        [tenant_id, runs],
    ).fetchall()
    return TenantSizes(
        records,
        revision_lists,
        [{endpoint: int(calls) for endpoint, calls in json.loads(row[0]).items()} for row in nightly],
        [int(row[1]) for row in nightly],
    )


def _live_records(con: duckdb.DuckDBPyConnection, tenant_id: str) -> dict[str, int]:
    """Live records of each paged list of the tenant (its root table), counted in one statement (each
    statement costs milliseconds to plan, whatever it reads)."""
    counts = " UNION ALL ".join(
        f"SELECT '{table}', count(*) FROM {table} WHERE tenant_id = $tenant AND {LIVE}"  # noqa: S608 - our table names
        for table in LISTS
    )
    found = dict(con.execute(counts, {"tenant": tenant_id}).fetchall())
    return {table: int(found[table]) for table in LISTS}


@dataclass(frozen=True)
class ReadEvidence:
    """What the committed warehouse says about how a run of the tenant should read its lists."""

    live_records: dict[str, int]
    """Live records of each paged list."""
    applied_since_commit: bool
    """Whether an HR apply of the tenant began after its last committed sync (or there is none)."""


def _read_evidence(con: duckdb.DuckDBPyConnection, tenant_id: str, tables: frozenset[str]) -> ReadEvidence:
    """The tenant's live records and whether an HR apply began since its last committed sync."""
    if not {"sync_runs", "hr_plans"} <= tables:
        return ReadEvidence({}, False)
    applied = con.execute(
        "SELECT count(*) FROM hr_plans WHERE tenant_id = ? AND apply_started_at >= coalesce("
        "(SELECT max(finished_at) FROM sync_runs WHERE tenant_id = ? AND status = 'succeeded'), "
        "'-infinity'::TIMESTAMPTZ)",
        [tenant_id, tenant_id],
    ).fetchone()
    return ReadEvidence(_live_records(con, tenant_id), bool(applied and applied[0]))


@dataclass(frozen=True)
class CheckEvidence:
    """What the committed warehouse adds to a run's staged rows for its checks: the tenant's user ids
    (a manager may be one loaded earlier) and the documents whose revision lists a committed run checked."""

    user_ids: frozenset[str] = frozenset()
    checked_documents: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RunStart:
    """Everything a run of one tenant reads from the committed warehouse before it asks the service
    anything, read through one connection (each open of the file costs about 0.1 s): how to read each list,
    where each cursor stands, which revision lists to verify, and the evidence its checks compare with. The
    tenant's sync lock is held from before this read to after the commit, so none of it changes meanwhile."""

    evidence: ReadEvidence
    cursors: dict[str, datetime | None]
    revision_plans: dict[str, RevisionPlan]
    checks: CheckEvidence


def run_start(con: duckdb.DuckDBPyConnection, tenant_id: str, recheck_days: int, now: datetime) -> RunStart:
    """The `RunStart` of the tenant's next run (``recheck_days``: the re-verification's cycle), read through
    ``con``: the run's own connection as it writes its row (`warehouse.commit.start_run`)."""
    tables = tables_of(con)
    checks = CheckEvidence(
        frozenset(_column_values(con, tenant_id, "users", "id") if "users" in tables else ()),
        frozenset(_checked_parents(con, tenant_id, "document", tables)),
    )
    return RunStart(
        _read_evidence(con, tenant_id, tables),
        _cursors(con, tenant_id, tables),
        revision_plans(con, tenant_id, recheck_days, now) if "sync_runs" in tables else {},
        checks,
    )
