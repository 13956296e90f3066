"""Extract one entity of one tenant into staging: the work behind each asset, free of Dagster.

Incremental by default: decisions, delegations, users and groups are asked only for records updated since
the committed cursor minus an overlap window (records written during the previous run's read are read
again rather than missed). If a returned record is older than the window, the service ignored the filter
(its parameter name is an assumption): the answer is then the whole list, so the extract is treated as a
full read (deletions detected too) and a warning is recorded. Revision ids are pulled only for delegations
and documents that are new or changed in this run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pyarrow.parquet as pq

from models.base import ServiceModel
from models.queries import DecisionQuery, DelegationQuery, GroupQuery, PageQuery, PositionQuery, UserQuery
from resources.client import AdmClient
from warehouse.rows import (
    TableRows,
    current_user_position_rows,
    decision_rows,
    delegation_rows,
    group_rows,
    position_rows,
    revision_rows,
    user_rows,
)
from warehouse.staging import StagingWriter, write_manifest

DEFAULT_OVERLAP = timedelta(minutes=10)
DEPENDENT = "dependent"
"""Mode of an extract whose scope follows another's (the revision lists)."""
PAGE_LIMIT = 100

M = TypeVar("M", bound=ServiceModel)


@dataclass
class ExtractReport:
    """What one extract did; written as its manifest and shown as asset metadata."""

    entity: str
    mode: str
    started_at: str
    rows: int = 0
    service_total: int | None = None
    cursor: str | None = None
    api_calls: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    retries: int = 0
    warnings: list[str] = field(default_factory=list)
    tables: dict[str, int] = field(default_factory=dict)

    def as_manifest(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class ExtractContext:
    """Where and how one tenant's run extracts."""

    client: AdmClient
    tenant_id: str
    staging: Path
    full_refresh: bool
    cursors: dict[str, datetime | None]
    overlap: timedelta = DEFAULT_OVERLAP

    def since(self, entity: str) -> datetime | None:
        """Start of the incremental window, or None for a full read."""
        cursor = self.cursors.get(entity)
        return None if self.full_refresh or cursor is None else cursor - self.overlap


@dataclass(frozen=True)
class ListExtract:
    """How one paged list is extracted: its query, its rows, its updated-at field and its tables."""

    query: Callable[[ExtractContext, datetime | None], PageQuery]
    flatten: Callable[[str, Any], TableRows]
    updated_of: Callable[[Any], datetime] | None
    tables: tuple[str, ...]
    incremental: bool = True


LISTS: dict[str, ListExtract] = {
    "decisions": ListExtract(
        lambda ctx, since: DecisionQuery(limit=PAGE_LIMIT, updated_at_start=since),
        decision_rows,
        lambda record: record.updated_at,
        ("decisions", "decision_groups", "decision_authorities", "decision_documents"),
    ),
    "delegations": ListExtract(
        lambda ctx, since: DelegationQuery(limit=PAGE_LIMIT, updated_at_start=since),
        delegation_rows,
        lambda record: record.updated_at,
        ("delegations",),
    ),
    "users": ListExtract(
        lambda ctx, since: UserQuery(limit=PAGE_LIMIT, updated_at_start=since),
        user_rows,
        lambda record: record.updated_on,
        ("users", "user_roles", "user_positions", "user_groups"),
    ),
    "groups": ListExtract(
        lambda ctx, since: GroupQuery(tenant_id=ctx.tenant_id, limit=PAGE_LIMIT, updated_at_start=since),
        group_rows,
        lambda record: record.updated_on,
        ("groups", "group_parents"),
    ),
    # Positions have no updated-at filter and are few: always read whole.
    "positions": ListExtract(
        lambda ctx, since: PositionQuery(tenant_id=ctx.tenant_id, limit=PAGE_LIMIT),
        position_rows,
        None,
        ("positions",),
        incremental=False,
    ),
}


def extract_list(ctx: ExtractContext, entity: str) -> ExtractReport:
    """Stage one paged list: the records updated since the cursor, or all of them."""
    spec = LISTS[entity]
    since = ctx.since(entity) if spec.incremental else None
    report = _report(ctx, entity, since)
    stream = ctx.client.iter_pages(spec.query(ctx, since))  # type: ignore[call-overload]
    newest = ctx.cursors.get(entity)
    with StagingWriter(ctx.staging) as writer:
        writer.declare(*spec.tables)
        for record in stream.items():
            writer.add(spec.flatten(ctx.tenant_id, record))
            report.rows += 1
            if spec.updated_of is not None:
                updated = spec.updated_of(record)
                newest = updated if newest is None or updated > newest else newest
                _notice_ignored_filter(report, since, updated)
    # The total of the last page: a list that grew while it was read was read to its new end.
    report.service_total = stream.last_total
    report.cursor = newest.isoformat() if newest and spec.updated_of else None
    return _finish(ctx, report, writer)


def _notice_ignored_filter(report: ExtractReport, since: datetime | None, updated: datetime) -> None:
    """A record older than the window means the service ignored the filter and sent the whole list."""
    if since is None or updated >= since or report.mode != "incremental":
        return
    report.mode = "full"
    report.warnings.append(
        f"{report.entity}: the service returned a record updated before {since.isoformat()}, so it ignored "
        "the updated-at filter; this run read the whole list instead"
    )


def extract_current_user_positions(ctx: ExtractContext) -> ExtractReport:
    """The positions of the user the credentials stand for (E9); one call, always full."""
    report = _report(ctx, "current_user_positions", None)
    with StagingWriter(ctx.staging) as writer:
        writer.declare("current_user_positions")
        for link in ctx.client.current_user_positions():
            writer.add(current_user_position_rows(ctx.tenant_id, link))
            report.rows += 1
    return _finish(ctx, report, writer)


def extract_delegation_revisions(ctx: ExtractContext) -> ExtractReport:
    """E11 for every delegation staged by this run (new or changed ones; all of them on a full read)."""
    ids = staged_ids(ctx.staging / "delegations.parquet", "id")
    return _extract_revisions(
        ctx, "delegation_revisions", "delegation_id", ids, ctx.client.delegation_revision_ids
    )


def extract_document_revisions(ctx: ExtractContext, never_pulled: set[str]) -> ExtractReport:
    """E12 for every document of a decision staged by this run, plus documents the warehouse references
    but never pulled (a previous run that failed half-way, say)."""
    referenced = staged_ids(ctx.staging / "decision_documents.parquet", "document_id")
    return _extract_revisions(
        ctx, "document_revisions", "document_id", referenced | never_pulled, ctx.client.document_revision_ids
    )


def staged_ids(path: Path, column: str) -> set[str]:
    """Distinct values of one column of a staged table (empty if the table was not staged)."""
    if not path.exists():
        return set()
    return {str(value) for value in pq.read_table(path, columns=[column]).column(column).to_pylist()}


def _extract_revisions(
    ctx: ExtractContext, table: str, parent_column: str, ids: set[str], fetch: Callable[[str], list[str]]
) -> ExtractReport:
    report = _report(ctx, table, None)
    # Revision lists follow their owner's list: which ones are read depends on what that list staged.
    report.mode = DEPENDENT
    with StagingWriter(ctx.staging) as writer:
        writer.declare(table)
        for parent_id, revision_ids in ctx.client.map_concurrent(fetch, sorted(ids)):
            writer.add({table: revision_rows(ctx.tenant_id, parent_column, parent_id, revision_ids)})
            report.rows += 1
    report.service_total = len(ids)
    return _finish(ctx, report, writer)


def _report(ctx: ExtractContext, entity: str, since: datetime | None) -> ExtractReport:
    mode = "incremental" if since is not None else "full"
    report = ExtractReport(entity=entity, mode=mode, started_at=datetime.now(UTC).isoformat())
    before = ctx.client.metrics
    report.api_calls = dict(before.calls)
    report.rate_limited = before.rate_limited
    report.retries = before.retries
    return report


def _finish(ctx: ExtractContext, report: ExtractReport, writer: StagingWriter) -> ExtractReport:
    """Turn the client's counters into this extract's share and write the manifest."""
    after = ctx.client.metrics
    report.api_calls = {
        k: v - report.api_calls.get(k, 0)
        for k, v in after.calls.items()
        if v - report.api_calls.get(k, 0) > 0
    }
    report.rate_limited = after.rate_limited - report.rate_limited
    report.retries = after.retries - report.retries
    report.tables = dict(writer.counts)
    write_manifest(ctx.staging, report.entity, report.as_manifest())
    return report
