"""Commit one tenant's staged run: one transaction merges every staged table, moves the extract cursors
and records the run in ``sync_runs``. Any error rolls everything back: the warehouse stays as it was."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from warehouse.merge import (
    FAMILIES,
    REVISIONS,
    Counts,
    MergeContext,
    load_staged,
    merge_family,
    merge_revisions,
    prune_orphan_revisions,
)
from warehouse.migrate import migrate
from warehouse.staging import read_manifests, staged_tables

logger = logging.getLogger(__name__)

MEMORY_LIMIT = "128MB"
"""DuckDB's buffer for a commit. Its default (80% of the machine) lets a full refresh hold every staged
table in memory (3.4 GB at 100,000 decisions); bounded, the merge spills to a temporary folder beside
the warehouse instead, so the run's memory stays flat as the tenant grows (for about 30% more commit time).
What DuckDB cannot spill (the primary-key indexes) grows with the tenant (96 MB no longer holds 100,000
decisions): a commit that outgrows the buffer rolls back and runs again with DuckDB's default."""


@dataclass
class RunSummary:
    """What a committed run did, as stored in ``sync_runs``."""

    run_id: str
    tenant_id: str
    mode: str
    started_at: datetime
    finished_at: datetime
    api_calls: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    retries: int = 0
    row_counts: dict[str, Counts] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def api_calls_total(self) -> int:
        """Calls of every endpoint together."""
        return sum(self.api_calls.values())


def connect(path: Path, memory_limit: str | None = MEMORY_LIMIT) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the warehouse file with its schema up to date; ``memory_limit`` bounds
    DuckDB's buffer (None: DuckDB's default)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path), config={"memory_limit": memory_limit} if memory_limit else {})
    migrate(con)
    return con


def commit_run(warehouse: Path, staging: Path, run_id: str, tenant_id: str) -> RunSummary:
    """Merge everything staged for ``tenant_id`` by ``run_id`` in one transaction."""
    try:
        return _commit(warehouse, staging, run_id, tenant_id, MEMORY_LIMIT)
    except duckdb.OutOfMemoryException:
        # The transaction rolled back, so nothing was written: once more with DuckDB's default buffer.
        logger.warning("commit of run %s needs more than %s: committing unbounded", run_id, MEMORY_LIMIT)
        return _commit(warehouse, staging, run_id, tenant_id, None)


def _commit(
    warehouse: Path, staging: Path, run_id: str, tenant_id: str, memory_limit: str | None
) -> RunSummary:
    manifests = read_manifests(staging)
    summary = _summary(run_id, tenant_id, manifests)
    con = connect(warehouse, memory_limit)
    try:
        con.begin()
        try:
            summary.row_counts = _merge_all(con, staging, manifests, run_id, tenant_id, summary.finished_at)
            _move_cursors(con, manifests, run_id, tenant_id)
            _record_run(con, summary)
            con.commit()
        except BaseException:
            con.rollback()
            raise
    finally:
        con.close()
    return summary


def _merge_all(
    con: duckdb.DuckDBPyConnection,
    staging: Path,
    manifests: dict[str, dict[str, Any]],
    run_id: str,
    tenant_id: str,
    now: datetime,
) -> dict[str, Counts]:
    staged = staged_tables(staging)
    load_staged(con, staged)
    counts: dict[str, Counts] = {}
    for name, family in FAMILIES.items():
        if family.root in staged:
            full = manifests.get(name, {}).get("mode", "full") == "full"
            counts |= merge_family(MergeContext(con, tenant_id, run_id, now, full), family, set(staged))
    for table, (_, owner) in REVISIONS.items():
        ctx = MergeContext(con, tenant_id, run_id, now, full=False)
        if table in staged:
            counts[table] = merge_revisions(ctx, table)
        owner_family = "delegations" if owner == "delegations" else "decisions"
        if manifests.get(owner_family, {}).get("mode") == "full":
            pruned = prune_orphan_revisions(ctx, table)
            counts.setdefault(table, {"inserted": 0, "updated": 0, "unchanged": 0, "deleted": 0})
            counts[table]["deleted"] += pruned
    return counts


def _move_cursors(
    con: duckdb.DuckDBPyConnection, manifests: dict[str, dict[str, Any]], run_id: str, tenant_id: str
) -> None:
    for entity, manifest in manifests.items():
        if manifest.get("cursor"):
            con.execute(
                "INSERT OR REPLACE INTO extract_cursors VALUES (?, ?, ?, ?)",
                [tenant_id, entity, manifest["cursor"], run_id],
            )


def _summary(run_id: str, tenant_id: str, manifests: dict[str, dict[str, Any]]) -> RunSummary:
    calls: Counter[str] = Counter()
    for manifest in manifests.values():
        calls.update(manifest.get("api_calls", {}))
    modes = {manifest.get("mode", "full") for manifest in manifests.values()} & {"full", "incremental"}
    starts = [datetime.fromisoformat(m["started_at"]) for m in manifests.values() if m.get("started_at")]
    now = datetime.now(UTC)
    return RunSummary(
        run_id=run_id,
        tenant_id=tenant_id,
        mode="full" if modes == {"full"} else "incremental",
        started_at=min(starts, default=now),
        finished_at=now,
        api_calls=dict(calls),
        rate_limited=sum(m.get("rate_limited", 0) for m in manifests.values()),
        retries=sum(m.get("retries", 0) for m in manifests.values()),
        warnings=[w for m in manifests.values() for w in m.get("warnings", [])],
    )


def _record_run(con: duckdb.DuckDBPyConnection, summary: RunSummary) -> None:
    con.execute(
        "INSERT INTO sync_runs VALUES (?, ?, ?, 'succeeded', ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            summary.run_id,
            summary.tenant_id,
            summary.mode,
            summary.started_at,
            summary.finished_at,
            summary.api_calls_total,
            json.dumps(summary.api_calls),
            summary.rate_limited,
            summary.retries,
            json.dumps(summary.row_counts),
            json.dumps(summary.warnings),
        ],
    )
