"""``sync_runs``: one row per run of a tenant sync, whatever its outcome, and what the API budget says.

A run writes its row when it starts (``running``, with its process and host). A committed run rewrites it
inside the commit's transaction, so ``succeeded`` is only ever written by the COMMIT that makes it true. A
run that did not commit (failed, or stopped by a blocking check) rewrites it in a small transaction of its
own, so that freshness and the API budget see every run, and the warehouse's data stays exactly as it
was. A run whose process was killed leaves ``running``: the tenant's next run marks it ``killed``.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import duckdb

from resources.contract import Rejection
from warehouse.read_modes import FULL
from warehouse.reads import read_only, table_exists


class RunStatus(StrEnum):
    """How a run ended."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    BLOCKED_BY_CHECK = "blocked_by_check"
    KILLED = "killed"
    INTERRUPTED = "interrupted"


Counts = dict[str, int]


@dataclass
class RunRecord:
    """One row of ``sync_runs``."""

    run_id: str
    tenant_id: str
    mode: str
    started_at: datetime
    status: RunStatus = RunStatus.FAILED
    finished_at: datetime | None = None
    job_name: str | None = None
    api_calls: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    retries: int = 0
    row_counts: dict[str, Counts] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    monthly_quota: int | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds each phase took (extract, checks, commit, publish): where a run's time went."""
    deviations: list[dict[str, Any]] = field(default_factory=list)
    """Tolerated deviations from the spec: list, endpoint, field, kind, records, sample ids."""
    rejections: list[Rejection] = field(default_factory=list)
    """Records kept out by the schema contract, written to ``rejected_records`` with the run."""
    recheck_days: int | None = None
    """ADM_REVISION_RECHECK_DAYS of the run: it re-verified about 1/N of the unchanged revision lists."""
    revisions_rechecked: int | None = None
    """Revision lists re-verified although their owner had not changed (known once committed)."""
    rechecks_found_new: int | None = None
    """How many of them held revision ids the warehouse did not have."""
    derivation: str | None = None
    """What derived the run's rows (`warehouse.unchanged.derivation`): rows it wrote or compared can be
    staged again unchanged by a run with the same."""
    records_reused: dict[str, int] = field(default_factory=dict)
    """Per list: records read unchanged whose stored rows the run staged instead of deriving them."""
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)

    @property
    def api_calls_total(self) -> int:
        """Calls of every endpoint together."""
        return sum(self.api_calls.values())


_COLUMNS = (
    "run_id, tenant_id, mode, status, started_at, finished_at, api_calls_total, api_calls, rate_limited_429, "
    "retries, row_counts, warnings, error, job_name, checks, monthly_quota, phase_seconds, deviations, "
    "rejected_records, pid, host, recheck_days, revisions_rechecked, rechecks_found_new, derivation, "
    "records_reused"
)
_PLACEHOLDERS = ", ".join("?" * len(_COLUMNS.split(",")))


def insert_run(con: duckdb.DuckDBPyConnection, record: RunRecord) -> None:
    """Write the run's row, replacing the one it wrote when it started (inside the caller's transaction).
    A delete and an insert: DuckDB's ``INSERT OR REPLACE`` updates every column of the row it finds, and
    cost three times as much (about 7 ms against 2, three times a run)."""
    running = record.status is RunStatus.RUNNING
    con.execute("DELETE FROM sync_runs WHERE run_id = ? AND tenant_id = ?", [record.run_id, record.tenant_id])
    con.execute(
        f"INSERT INTO sync_runs ({_COLUMNS}) VALUES ({_PLACEHOLDERS})",  # noqa: S608 - fixed names
        [
            record.run_id,
            record.tenant_id,
            record.mode,
            record.status.value,
            record.started_at,
            None if running else record.finished_at or datetime.now(UTC),
            record.api_calls_total,
            json.dumps(record.api_calls),
            record.rate_limited,
            record.retries,
            json.dumps(record.row_counts),
            json.dumps(record.warnings),
            record.error,
            record.job_name,
            json.dumps(record.checks),
            record.monthly_quota,
            json.dumps(record.phase_seconds),
            json.dumps(record.deviations),
            len(record.rejections),
            record.pid,
            record.host,
            record.recheck_days,
            record.revisions_rechecked,
            record.rechecks_found_new,
            record.derivation,
            json.dumps(record.records_reused),
        ],
    )
    if record.rejections:
        stamp = record.finished_at or datetime.now(UTC)
        con.executemany(
            "INSERT INTO rejected_records (run_id, tenant_id, list_name, endpoint, page, position, "
            "record_id, field, rule, value_received, record, rejected_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    record.run_id,
                    record.tenant_id,
                    r.list_name,
                    r.endpoint,
                    r.page,
                    r.position,
                    r.record_id,
                    r.field,
                    r.rule,
                    r.value,
                    r.record,
                    stamp,
                ]
                for r in record.rejections
            ],
        )


@dataclass(frozen=True)
class Progress:
    """What a run had spent when it last reported (its staging keeps the report: a killed run's calls)."""

    api_calls: dict[str, int]
    rate_limited: int
    retries: int
    at: datetime


def mark_killed(
    con: duckdb.DuckDBPyConnection, tenant_id: str, progress: dict[str, Progress], now: datetime
) -> list[str]:
    """Mark killed every ``running`` row of the tenant, with the calls its last progress report counted;
    returns their run ids. Call it holding the tenant's lock: then no run of the tenant is alive."""
    rows = con.execute(
        "SELECT run_id, pid, host FROM sync_runs WHERE tenant_id = ? AND status = 'running'", [tenant_id]
    ).fetchall()
    for run_id, pid, host in rows:
        spent = progress.get(str(run_id))
        con.execute(
            "UPDATE sync_runs SET status = 'killed', finished_at = ?, error = ?, api_calls_total = ?, "
            "api_calls = ?, rate_limited_429 = ?, retries = ? WHERE run_id = ? AND tenant_id = ?",
            [
                spent.at if spent else now,
                f"killed: process {pid} on {host} ended before the run finished; nothing was committed",
                sum(spent.api_calls.values()) if spent else 0,
                json.dumps(spent.api_calls if spent else {}),
                spent.rate_limited if spent else 0,
                spent.retries if spent else 0,
                run_id,
                tenant_id,
            ],
        )
    return [str(row[0]) for row in rows]


def update_after_commit(con: duckdb.DuckDBPyConnection, record: RunRecord) -> None:
    """Store the run's phase timings and warnings again: what it learns after its commit (the commit's own
    time, the publish's time or its failure)."""
    con.execute(
        "UPDATE sync_runs SET phase_seconds = ?, warnings = ? WHERE run_id = ? AND tenant_id = ?",
        [json.dumps(record.phase_seconds), json.dumps(record.warnings), record.run_id, record.tenant_id],
    )


@dataclass(frozen=True)
class QuotaProjection:
    """Where this month's API calls stand and where this run would take them."""

    month_calls: int
    estimate: int
    quota: int
    max_share: float
    estimated_from: str

    @property
    def projected(self) -> int:
        """This month's calls after the run."""
        return self.month_calls + self.estimate

    @property
    def over(self) -> bool:
        """Whether the run would push the month past the allowed share of the quota."""
        return self.projected > self.quota * self.max_share

    def describe(self) -> str:
        """One line: calls so far, the estimate, the projection and the limit."""
        return (
            f"{self.month_calls:,} API calls this month + about {self.estimate:,} for this run "
            f"({self.estimated_from}) = {self.projected:,} of a {self.quota:,} monthly quota "
            f"({self.projected / self.quota:.0%}; the limit is {self.max_share:.0%})"
        )

    def as_metadata(self) -> dict[str, Any]:
        """JSON-ready figures."""
        return {
            "month_calls": self.month_calls,
            "estimate": self.estimate,
            "projected": self.projected,
            "quota": self.quota,
            "max_share": self.max_share,
            "estimated_from": self.estimated_from,
        }


def project_quota(
    con: duckdb.DuckDBPyConnection, tenant_id: str, mode: str, quota: int, max_share: float, now: datetime
) -> QuotaProjection:
    """This month's calls of the tenant and an estimate of the next run of ``mode``: the calls of the last
    run of the same mode, else of the last full run (an upper bound), else nothing known."""
    month_start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    used = con.execute(
        "SELECT coalesce(sum(api_calls_total), 0) FROM sync_runs WHERE tenant_id = ? AND started_at >= ?",
        [tenant_id, month_start],
    ).fetchone()
    estimate = _last_calls(con, tenant_id, mode) or _last_calls(con, tenant_id, FULL)
    calls, source = estimate or (0, "no earlier run")
    return QuotaProjection(int(used[0]) if used else 0, calls, quota, max_share, source)


def _last_calls(con: duckdb.DuckDBPyConnection, tenant_id: str, mode: str) -> tuple[int, str] | None:
    found = con.execute(
        "SELECT api_calls_total, run_id FROM sync_runs WHERE tenant_id = ? AND mode = ? "
        "AND status = 'succeeded' ORDER BY finished_at DESC LIMIT 1",
        [tenant_id, mode],
    ).fetchone()
    return (int(found[0]), f"the last {mode} run, {str(found[1])[:8]}") if found else None


def last_success(warehouse: Path, tenant_id: str) -> datetime | None:
    """When the tenant's last committed sync finished, if ever."""
    with read_only(warehouse) as con:
        if con is None or not table_exists(con, RUNS_TABLE):
            return None
        found = con.execute(
            "SELECT max(finished_at) FROM sync_runs WHERE tenant_id = ? AND status = 'succeeded'", [tenant_id]
        ).fetchone()
    return found[0] if found else None


RUNS_TABLE = "sync_runs"
"""The table of run rows, one per run and tenant (the ``adm/sync_runs`` asset)."""

SUMMARY = """
SELECT tenant_id, run_id, status, mode, api_calls_total, rate_limited_429, retries, row_counts, warnings,
       finished_at - started_at, error, monthly_quota,
       -- The month's calls up to this run (months in UTC, as the quota counts them).
       (SELECT sum(api_calls_total) FROM sync_runs m
        WHERE m.tenant_id = r.tenant_id AND m.finished_at <= r.finished_at
          AND date_trunc('month', timezone('UTC', m.started_at))
            = date_trunc('month', timezone('UTC', r.started_at))),
       coalesce(deviations, '[]'), coalesce(rejected_records, 0), revisions_rechecked, rechecks_found_new,
       recheck_days, coalesce(phase_seconds, '{}')
FROM sync_runs r WHERE list_contains(?, run_id) ORDER BY finished_at
"""


def run_summaries(warehouse: Path, run_ids: list[str]) -> list[tuple[Any, ...]]:
    """The rows the CLI's run summary prints (`SUMMARY`'s columns), of the runs named, oldest first. Read
    from the writer's file, not the copy for readers: only it holds the rows of runs that did not commit,
    and the publish's own time."""
    with read_only(warehouse) as con:
        if con is None:
            return []
        return con.execute(SUMMARY, [run_ids]).fetchall()


def table_rows(con: duckdb.DuckDBPyConnection, tenant_id: str, tables: list[str]) -> dict[str, int]:
    """Rows each table holds for the tenant, counted in one statement (a statement costs milliseconds,
    and a commit counts about thirty tables); ``tables`` is not empty."""
    counted = " UNION ALL ".join(
        f"SELECT '{table}', count(*) FROM \"{table}\" WHERE tenant_id = $tenant"  # noqa: S608 - fixed names
        for table in tables
    )
    return {str(table): int(rows) for table, rows in con.execute(counted, {"tenant": tenant_id}).fetchall()}
