"""Extract one tenant into staging: every list side by side, revision ids as their owners stream.

One client, so one rate limiter and one window of requests in flight for the whole tenant. Each list is
read on a thread of its own (its pages concurrently, through the client's window) and staged as it
arrives; the revision-id calls (E11 per delegation, E12 per document) start as soon as the first
delegation or decision is staged, so parsing and staging overlap the network waits.

Incremental by default: decisions, delegations, users and groups are asked only for records updated since
the committed cursor minus an overlap window (records written during the previous run's read are read
again rather than missed). If a returned record is older than the window, the service ignored the filter
(its parameter name is an assumption): the answer is then the whole list, so the extract is treated as a
full read (deletions detected too) and a warning is recorded.

Revision ids (E11, E12: the bulk of a tenant's calls) are asked for, in either mode, only for delegations
and documents that are new, whose owner record changed since the last commit (its content hash, which
covers ``updatedAt``), that the warehouse never checked, or that fall in this run's share of the rolling
re-verification (`warehouse.reads.revision_plans`): a revision the service adds without touching its owner
is found within ``ADM_REVISION_RECHECK_DAYS`` runs, at a flat cost per run. A full refresh still reads
every list whole, which is what finds deleted records.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from models.base import canonical_id
from models.errors import AuthoritySyncError
from resources.client import AdmClient
from resources.clock import ServiceClock
from resources.concurrency import Feed
from resources.contract import DeviationKind, RecordContract
from resources.errors import NotFoundError
from resources.metrics import MetricsSnapshot
from warehouse.catalog import (
    CURRENT_USER_POSITIONS,
    LISTS,
    REVISIONS,
    ListTables,
    RevisionList,
    revisions_named_by,
)
from warehouse.read_modes import DEPENDENT, FULL, INCREMENTAL
from warehouse.reads import RevisionPlan
from warehouse.rows import TableRows, check_row, current_user_position_rows, revision_rows
from warehouse.staging import RevisionJournal, StagingWriter
from warehouse.unchanged import text_digest

logger = logging.getLogger(__name__)

DEFAULT_OVERLAP = timedelta(minutes=10)
WHOLE_READ_MAX_RECORDS = 5_000
"""A list whose records change unseen by its cursor is read whole on every run while it holds at most
this many live records (50 calls of 100; see `whole_reads`)."""
PAGE_LIMIT = 100


class ExtractStoppedError(AuthoritySyncError, RuntimeError):
    """Another read of the same extract failed, so this one stopped."""


@dataclass
class EntityReport:
    """What the read of one entity did; shown as metadata and judged by the blocking checks."""

    entity: str
    mode: str
    rows: int = 0
    service_total: int | None = None
    """The total the list reported at the end of its read (for revision lists, the parents read)."""
    first_total: int | None = None
    """The total page 1 reported: differs from ``service_total`` when the list changed while read."""
    complete: bool = True
    """Whether the read reached the list's proven end (a short or empty page), whatever its total said."""
    vanished: list[str] = field(default_factory=list)
    """Ids read early in the run that the list no longer held when its read settled: removed meanwhile."""
    reread: bool = False
    """Whether the ids read disagreed with the list's total and a second pass listed exactly the same
    records (nothing moved: the difference is the service's own count)."""
    replaced: int = 0
    """Records met again, changed, while the list was read: their latest copy is the one staged."""
    without_cursor: int = 0
    """Records that lacked the updated-at field the cursor follows (the list is then read whole)."""
    future: int = 0
    """Records stamped later than the service's own clock: loaded, but they move no cursor."""
    unchanged: set[str] = field(default_factory=set)
    """Ids of records read with the text of stored rows the run may stage again (`warehouse.unchanged`):
    not derived again; their stored rows join the staging after the read (``tables`` then counts them)."""
    checks: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Revision lists only: parent id -> what its check found (``listed``, ``empty``, ``not_found``) and
    how many revision ids."""
    rejected: int = 0
    """Records the schema contract kept out (they are in ``rejected_records``)."""
    cursor: datetime | None = None
    """The newest updated-at stamp read that is not in the service's future (incremental lists only)."""
    forget_cursor: bool = False
    """Whether the committed cursor is to be cleared when ``cursor`` is None (it cannot be trusted)."""
    warnings: list[str] = field(default_factory=list)
    tables: dict[str, int] = field(default_factory=dict)


@dataclass
class TenantExtract:
    """Everything one tenant's extract staged."""

    staging: Path
    reports: dict[str, EntityReport]
    metrics: MetricsSnapshot
    contract: RecordContract = field(default_factory=RecordContract)
    """The schema contract the lists were read under, with its log of deviations and rejections."""

    @property
    def tables(self) -> dict[str, int]:
        """Rows staged per table."""
        return {table: rows for report in self.reports.values() for table, rows in report.tables.items()}

    @property
    def warnings(self) -> list[str]:
        """Every entity's warnings."""
        return [warning for report in self.reports.values() for warning in report.warnings]

    @property
    def mode(self) -> str:
        """``full`` when every list was read whole, else ``incremental``."""
        modes = {report.mode for report in self.reports.values()} - {DEPENDENT}
        return FULL if modes == {FULL} else INCREMENTAL


@dataclass(frozen=True)
class ExtractRequest:
    """Where and how one tenant's run extracts."""

    client: AdmClient
    tenant_id: str
    staging: Path
    full_refresh: bool
    cursors: dict[str, datetime | None]
    overlap: timedelta = DEFAULT_OVERLAP
    revision_plans: Mapping[str, RevisionPlan] = field(default_factory=dict)
    """Per kind of revision list (delegation, document): what the warehouse knows (no plan: ask for every
    list the lists name)."""
    contract: RecordContract = field(default_factory=RecordContract)
    """How records off the spec are read; its log collects deviations and rejected records."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when one read fails: the others stop at their next record instead of reading to the end."""
    resume: Path | None = None
    """Where the tenant's runs journal the revision lists they fetched (None: no journal, no reuse)."""
    resume_max_age: timedelta = timedelta(hours=12)
    """How old an answer of an earlier, uncommitted attempt may be to be reused."""
    whole: frozenset[str] = frozenset()
    """Incremental lists this run reads whole all the same (`whole_reads`)."""
    unchanged: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per list read whole: the records whose stored rows may be staged again if their text is unchanged,
    id -> MD5 of the stored text (`warehouse.unchanged.stored_digests`)."""

    def check_stop(self) -> None:
        """Raise `ExtractStoppedError` once another read of this extract has failed."""
        if self.stop.is_set():
            raise ExtractStoppedError("stopped: another read of this tenant failed")

    def since(self, entity: str) -> datetime | None:
        """Start of the incremental window, or None for a full read: the overlap before the cursor, and no
        later than the start of the cursor's UTC day, because a service may stamp a change with its date
        alone (that day's midnight), which is earlier than the cursor when the change came after it the
        same day."""
        cursor = self.cursors.get(entity)
        if cursor is None or reads_whole(entity, self.full_refresh, self.cursors, self.whole):
            return None
        day = cursor.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return min(cursor - self.overlap, day)


def whole_reads(live_records: Mapping[str, int], applied_since_commit: bool) -> frozenset[str]:
    """The lists whose records change without their updated-at moving (``unseen_changes``) that a run
    reads whole: each one holding at most `WHOLE_READ_MAX_RECORDS` live records, and every one of them
    after an HR apply of the product's own (which writes exactly such changes) since the last commit.
    A larger list is read incrementally; its unseen changes wait for the weekly full refresh."""
    return frozenset(
        name
        for name, entry in LISTS.items()
        if entry.unseen_changes
        and (applied_since_commit or live_records.get(name, 0) <= WHOLE_READ_MAX_RECORDS)
    )


def reads_whole(
    entity: str, full_refresh: bool, cursors: Mapping[str, datetime | None], whole: frozenset[str]
) -> bool:
    """Whether a run reads the list ``entity`` whole: a full refresh, a list without a cursor (never
    committed, or cleared), one the service offers no incremental read of, or one of ``whole``."""
    incremental = LISTS[entity].source.incremental
    return full_refresh or not incremental or cursors.get(entity) is None or entity in whole


CHECKS_TABLE = "revision_checks"
LISTED, EMPTY, NOT_FOUND = "listed", "empty", "not_found"
"""What the check of one revision list found: revision ids, an empty list, or no such record (404)."""
NEW, CHANGED, RECHECK = "new", "changed", "recheck"
"""Why a revision list was asked for: never checked, its owner changed, or its turn to be verified again."""

READS = len(LISTS) + 1 + len(REVISIONS)
"""The reads of one tenant's extract, side by side: every paged list, E9, every kind of revision list."""

Parent = tuple[str, str]
"""A revision list to read: its parent's id and the stamp (content hash) of the record that named it."""


@dataclass
class RevisionScope:
    """Which revision lists of one kind this run asks for, fed to their reader as the lists stream: those
    the plan says are due at once, then each one a streamed record names, unless that record is one the
    warehouse holds unchanged and the list was checked before."""

    plan: RevisionPlan
    feed: Feed[Parent] = field(default_factory=Feed)
    named: set[str] = field(default_factory=set)
    """Lists a new or changed record named (written by the one thread reading the owners' list)."""

    def start(self) -> None:
        """Feed the lists due whatever their owners say (stamp "": no owner named them)."""
        for parent_id in sorted(self.plan.due):
            self.feed.put((parent_id, ""))

    def offer(self, parent_id: str, owner_hash: str) -> None:
        """A streamed record (whose content hash is ``owner_hash``) names this list."""
        if parent_id in self.plan.checked and owner_hash in self.plan.owner_hashes:
            return
        self.named.add(parent_id)
        self.feed.put((parent_id, owner_hash))

    def reason(self, parent_id: str) -> str:
        """Why the list was asked for (after every owner list was read)."""
        if parent_id not in self.plan.checked:
            return NEW
        return RECHECK if parent_id in self.plan.recheck and parent_id not in self.named else CHANGED


Scopes = dict[str, RevisionScope]


def extract_tenant(request: ExtractRequest) -> TenantExtract:
    """Stage every entity of the tenant; the first failure of any read stops the others and is raised."""
    scopes: Scopes = {
        table: RevisionScope(request.revision_plans.get(revisions.kind, RevisionPlan()))
        for table, revisions in REVISIONS.items()
    }
    for scope in scopes.values():
        scope.start()
    with ThreadPoolExecutor(READS, thread_name_prefix="adm-extract") as pool:
        futures = {entity: pool.submit(extract_list, request, entity, scopes) for entity in LISTS}
        futures[CURRENT_USER_POSITIONS.family.root] = pool.submit(extract_current_user_positions, request)
        for table, scope in scopes.items():
            futures[table] = pool.submit(extract_revisions, request, REVISIONS[table], scope.feed)
        done, _ = wait(futures.values(), return_when=FIRST_EXCEPTION)
        failed = next((future for future in done if future.exception() is not None), None)
        if failed is not None:
            request.stop.set()
            raise failed.exception()  # type: ignore[misc]
    reports = {entity: future.result() for entity, future in futures.items()}
    reports[CHECKS_TABLE] = stage_revision_checks(
        request, [(reports[table], scopes[table]) for table in REVISIONS]
    )
    return TenantExtract(request.staging, reports, request.client.metrics, request.contract)


def extract_list(request: ExtractRequest, entity: str, scopes: Scopes) -> EntityReport:
    """Stage one paged list (what changed since the cursor, or all of it) and feed the revision reads
    with the ids its records name; the feeds are closed however the read ends."""
    entry = LISTS[entity]
    since = request.since(entity) if entry.source.incremental else None
    # A full read sets the cursor afresh from what it reads (so it also repairs a cursor in the future);
    # an incremental one starts from the committed cursor, which a read without changes keeps.
    cursor = request.cursors.get(entity) if since is not None else None
    report = EntityReport(
        entity,
        INCREMENTAL if since is not None else FULL,
        cursor=cursor,
        forget_cursor=since is None and entry.source.incremental,
    )
    named = {revisions: scopes[revisions.table] for revisions in revisions_named_by(entity)}
    try:
        _stage_list(request, entry, report, since, named)
    except BaseException as error:
        for scope in named.values():
            scope.feed.close(error)
        raise
    for scope in named.values():
        scope.feed.close()
    logger.info(
        "%s: %d records staged (%s; %d changed while read, their latest copy kept)",
        entity,
        report.rows,
        report.mode,
        report.replaced,
    )
    return report


def _stage_list(
    request: ExtractRequest,
    entry: ListTables,
    report: EntityReport,
    since: datetime | None,
    named: Mapping[RevisionList, RevisionScope],
) -> None:
    source = entry.source
    query = source.whole_read(request.tenant_id, PAGE_LIMIT, since)
    stream = request.client.iter_list(source, query, request.contract)
    with StagingWriter(request.staging) as writer:
        writer.declare(*entry.family.tables)
        for record in stream.items():
            request.check_stop()
            if not _unchanged(request, entry, report, since, record):
                writer.add(_staged(request, entry, report, since, named, record))
            report.rows += 1
        # Records that changed while the list was read: their latest copy replaces the one staged (or noted
        # unchanged, whose stored rows then stay out).
        report.unchanged.difference_update(canonical_id(record.id) for record in stream.newer.values())
        newer = [_staged(request, entry, report, since, named, record) for record in stream.newer.values()]
        family = entry.family
        writer.replace({table: family.parent_column(table) for table in family.tables}, newer)
    # The list's final total: a list that grew while it was read was read to its new end.
    report.service_total, report.first_total = stream.last_total, stream.total
    report.complete, report.vanished = stream.complete, stream.vanished
    report.reread, report.replaced = stream.reread, len(newer)
    report.rejected = len(request.contract.log.rejected_from(source.name))
    report.tables = dict(writer.counts)
    _note_read(report, stream.page_size)
    _check_cursor(report, request.client.service_clock)


def _staged(
    request: ExtractRequest,
    entry: ListTables,
    report: EntityReport,
    since: datetime | None,
    named: Mapping[RevisionList, RevisionScope],
    record: Any,
) -> TableRows:
    """The rows of one record read: offered to the revision reads, its updated-at to the cursor."""
    rows = entry.flatten(request.tenant_id, record)
    _offer_parents(entry, rows, named)
    _follow_cursor(request, report, since, record)
    return rows


def _unchanged(
    request: ExtractRequest, entry: ListTables, report: EntityReport, since: datetime | None, record: Any
) -> bool:
    """Whether the record read has the text of stored rows the run may stage again (`warehouse.unchanged`):
    then it is only noted and its updated-at followed. A second record of the same id is derived, so that
    the staging holds the id twice, as it would without reuse, and the checks see it."""
    stored = request.unchanged.get(entry.name)
    if not stored:
        return False
    record_id = canonical_id(record.id)
    digest = stored.get(record_id)
    if digest is None or record_id in report.unchanged or text_digest(record.raw_json()) != digest:
        return False
    report.unchanged.add(record_id)
    _follow_cursor(request, report, since, record)
    return True


def _offer_parents(entry: ListTables, rows: TableRows, named: Mapping[RevisionList, RevisionScope]) -> None:
    """Offer the revision reads the parents this record names (a delegation its own id, a decision the
    documents it cites), stamped with the record's content hash."""
    if not named:
        return
    (record,) = rows[entry.name]
    for revisions, scope in named.items():
        for row in rows[revisions.owner]:
            parent_id = row[revisions.owner_column]
            # A parent cited without a usable id has no revision list to ask for.
            if isinstance(parent_id, str) and parent_id.strip():
                scope.offer(parent_id, record["content_hash"])


def _note_read(report: EntityReport, page_size: int) -> None:
    """Warn once about what the read learnt of the service: records without the cursor field (the list is
    then read whole: its cursor is cleared), records removed while the list was read, a capped page."""
    if report.without_cursor:
        report.cursor, report.forget_cursor = None, True
        report.warnings.append(
            f"{report.entity}: {report.without_cursor} record(s) lack the updated-at field the incremental "
            "cursor follows, so this list is read whole until the service sends it"
        )
    if report.vanished:
        report.warnings.append(
            f"{report.entity}: {len(report.vanished)} record(s) were removed from the list while it was "
            f"read (marked deleted): {', '.join(report.vanished[:5])}"
        )
    if page_size < PAGE_LIMIT:
        report.warnings.append(
            f"{report.entity}: the service serves {page_size} records a page (asked for {PAGE_LIMIT})"
        )


def _follow_cursor(
    request: ExtractRequest, report: EntityReport, since: datetime | None, record: Any
) -> None:
    """Move the list's cursor to ``record``'s updated-at stamp unless the stamp is missing or later than
    the service's own clock (then the record is counted and the stamp recorded as a deviation)."""
    source = LISTS[report.entity].source
    updated = source.updated_of(record)
    if updated is None:
        report.without_cursor += 1 if source.incremental else 0
    elif request.client.service_clock.ahead(updated):
        report.future += 1
        request.contract.log.deviated(source, str(source.updated), DeviationKind.FUTURE_INSTANT, record.id)
    else:
        _advance_cursor(report, since, updated)


def _check_cursor(report: EntityReport, clock: ServiceClock) -> None:
    """Warn about records stamped in the service's future; clear a committed cursor that is itself in the
    future (stored before the rule held), so that the next run reads the list whole."""
    if report.future:
        report.warnings.append(
            f"{report.entity}: {report.future} record(s) are stamped later than the service's own clock "
            f"({clock.now()}): loaded, but the cursor does not follow them"
        )
    if report.cursor is not None and clock.ahead(report.cursor):
        report.warnings.append(
            f"{report.entity}: the committed cursor {report.cursor.isoformat()} is later than the service's "
            f"own clock ({clock.now()}): cleared, so the next run reads this list whole"
        )
        report.cursor, report.forget_cursor = None, True


def _advance_cursor(report: EntityReport, since: datetime | None, updated: datetime) -> None:
    if report.cursor is None or updated > report.cursor:
        report.cursor = updated
    # A record older than the window means the service ignored the filter and sent the whole list.
    if since is not None and updated < since and report.mode == INCREMENTAL:
        report.mode = FULL
        report.warnings.append(
            f"{report.entity}: the service returned a record updated before {since.isoformat()}, so it "
            "ignored the updated-at filter; this run read the whole list instead"
        )


def extract_current_user_positions(request: ExtractRequest) -> EntityReport:
    """The positions of the user the credentials stand for (E9); one call, always full."""
    table = CURRENT_USER_POSITIONS.family.root
    report = EntityReport(table, FULL)
    seen: set[str] = set()
    with StagingWriter(request.staging) as writer:
        writer.declare(table)
        for link in request.client.current_user_positions(request.contract):
            rows = current_user_position_rows(request.tenant_id, link)
            (row,) = rows[table]
            if row["id"] in seen:  # the same link listed twice (ids compared as keyed): once is enough
                continue
            seen.add(row["id"])
            writer.add(rows)
            report.rows += 1
    report.tables = dict(writer.counts)
    return report


def extract_revisions(
    request: ExtractRequest, revisions: RevisionList, parents: Feed[Parent]
) -> EntityReport:
    """The revision list (E11, E12) of every distinct parent id the feed brings, as they arrive. A parent
    the service no longer finds (404: deleted since it was listed) is noted, not a failure of the tenant.
    An answer an earlier, uncommitted attempt got for the same parent, named by an unchanged record, is
    reused."""
    table, parent_column = revisions.table, revisions.parent_column
    journal = _journal(request, revisions)

    def checked(parent: Parent) -> tuple[bool, list[str] | None]:
        known, answer = journal.answer(*parent) if journal else (False, None)
        if known:
            return True, answer
        try:
            return False, request.client.revision_ids(revisions.endpoint, parent[0])
        except NotFoundError:
            return False, None

    report = EntityReport(table, DEPENDENT)
    with StagingWriter(request.staging) as writer:
        writer.declare(table)
        for (parent_id, stamp), (reused, revision_ids) in request.client.map_concurrent(
            checked, _distinct(parents)
        ):
            request.check_stop()
            if journal and not reused:
                journal.note(parent_id, stamp, revision_ids)
            report.checks[parent_id] = (_outcome(revision_ids), len(revision_ids or []))
            writer.add(
                {table: revision_rows(request.tenant_id, parent_column, parent_id, revision_ids or [])}
            )
            report.rows += 1
    if journal:
        journal.close()
        if journal.reused:
            report.warnings.append(
                f"{table}: {journal.reused} revision list(s) reused from an earlier run that did not commit"
            )
    report.service_total = report.rows
    report.tables = dict(writer.counts)
    gone = sorted(parent for parent, (outcome, _) in report.checks.items() if outcome == NOT_FOUND)
    if gone:
        report.warnings.append(
            f"{table}: {len(gone)} {revisions.kind}(s) answered 404 (deleted since they were listed; "
            f"no revisions stored): {', '.join(gone[:5])}"
        )
    return report


def _outcome(revision_ids: list[str] | None) -> str:
    if revision_ids is None:
        return NOT_FOUND
    return LISTED if revision_ids else EMPTY


def stage_revision_checks(
    request: ExtractRequest, reads: list[tuple[EntityReport, RevisionScope]]
) -> EntityReport:
    """Stage what each revision-list check of this run found and why it was made (``revision_checks``;
    the commit keeps the re-verifications, ``reason`` = recheck, in ``revision_rechecks``)."""
    report = EntityReport(CHECKS_TABLE, DEPENDENT)
    with StagingWriter(request.staging) as writer:
        writer.declare(CHECKS_TABLE)
        for revisions, scope in reads:
            kind = REVISIONS[revisions.entity].kind
            for parent_id, (outcome, count) in revisions.checks.items():
                row = check_row(request.tenant_id, kind, parent_id, outcome, count, scope.reason(parent_id))
                writer.add({CHECKS_TABLE: [row]})
                report.rows += 1
    report.tables = dict(writer.counts)
    return report


def _journal(request: ExtractRequest, revisions: RevisionList) -> RevisionJournal | None:
    if request.resume is None:
        return None
    return RevisionJournal(request.resume, revisions.kind, request.resume_max_age)


def _distinct(parents: Feed[Parent]) -> Iterator[Parent]:
    """Each parent once (the first record to name it gives its stamp)."""
    seen: set[str] = set()
    for parent in parents:
        if parent[0] not in seen:
            seen.add(parent[0])
            yield parent
