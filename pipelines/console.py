"""What the CLI prints: run summaries and query results as rich tables. Nothing here prints secrets: runs
are identified by tenant and run id, the service by its address."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pipelines.budget import MonthProjection
from warehouse.publish_target import PublishTarget
from warehouse.runs import run_summaries


def run_summary(
    console: Console,
    warehouse: Path,
    run_ids: list[str],
    published: PublishTarget | None = None,
    label: Callable[[str], str] = str,
) -> None:
    """One table per run as ``sync_runs`` holds it: status, mode, API calls (and the month's against the
    quota), 429s and rows changed per table; the revision lists it re-verified; the error of a run that did
    not commit; where the copy for readers was published (a failed publish is one of the run's warnings).
    ``label`` shows a tenant id as people know it."""
    rows = run_summaries(warehouse, run_ids)
    for tenant, *row, phases in rows:
        _print_run(console, escape(label(tenant)), *row)
        publish_s = json.loads(phases).get("publish")
        if published is not None and publish_s is not None:
            _print_published(console, published, publish_s)


def _print_run(
    console: Console,
    tenant: str,
    run_id: str,
    status: str,
    mode: str,
    calls: int,
    limited: int,
    retries: int,
    counts: str,
    warnings: str,
    took: timedelta,
    error: str | None,
    quota: int | None,
    month_calls: int,
    deviations: str,
    rejected: int,
    rechecked: int | None,
    found_new: int | None,
    recheck_days: int | None,
) -> None:
    budget = f" ({month_calls:,} this month of {quota:,}, {month_calls / quota:.0%})" if quota else ""
    table = Table(
        title=f"tenant {tenant} | {mode} run {run_id[:8]} {status} | {calls} API calls{budget}, "
        f"{limited} x 429, {retries} retries, {took.total_seconds():.1f} s"
    )
    for column in ("table", "inserted", "updated", "unchanged", "deleted"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name, count in json.loads(counts).items():
        table.add_row(name, *(str(count[key]) for key in ("inserted", "updated", "unchanged", "deleted")))
    console.print(table)
    if error:
        console.print(f"[red]{status}:[/] {escape(error)}")
    for warning in json.loads(warnings):
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    for found in json.loads(deviations):
        # Runs before migration 0044 counted deviations per endpoint, without the list's name.
        source = found.get("list", found["endpoint"])
        console.print(
            f"[yellow]off the spec, tolerated:[/] {source} {escape(found['field'])} "
            f"{found['kind']} x{found['records']} (e.g. {', '.join(found['sample_ids'][:2])})"
        )
    if rejected:
        console.print(
            f"[yellow]{rejected} record(s) rejected:[/] see the table rejected_records (run {run_id})"
        )
    if rechecked is not None:
        console.print(
            f"revision lists re-verified (1/{recheck_days} of the unchanged ones a run): {rechecked}, "
            f"{found_new or 0} of them with new revision ids"
        )


def _print_published(console: Console, published: PublishTarget, seconds: float) -> None:
    parquet = f", Parquet listed in {published.parquet_manifest}" if published.parquet else ""
    console.print(f"published for readers in {seconds:.1f} s: {escape(str(published.path))}{escape(parquet)}")


def query_results(console: Console, con: duckdb.DuckDBPyConnection, title: str, sql: str) -> None:
    """Print a query and its result."""
    relation = con.sql(sql)
    console.print(rows_table(relation.columns, relation.fetchall(), title, " ".join(sql.split())))


def rows_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A query's rows as a table for people: lists joined with commas, NULL empty."""
    table = Table(title=title, caption=caption)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    return table


def _cell(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return "" if value is None else str(value)


def budget_table(console: Console, tenant_id: str, projections: Sequence[MonthProjection]) -> None:
    """One tenant's projected month, one row per plan (the configured one first), and a warning when the
    configured plan's month would pass the allowed share of its quota."""
    configured, calls = projections[0], projections[0].calls
    table = Table(
        title=f"tenant {tenant_id} | a full refresh ~{calls.full:,} API calls, a nightly run "
        f"~{calls.nightly:,} | {configured.full_runs:.1f} full refreshes and {configured.nightly_runs:.1f} "
        "nightly runs a month",
    )
    for column in (
        "plan",
        "calls a month",
        "of the quota",
        "full refresh",
        "nightly run",
        "wall time a month",
    ):
        table.add_column(column, justify="left" if column == "plan" else "right")
    for month in projections:
        marker = " (set)" if month is configured else ""
        table.add_row(
            f"{month.plan.value}{marker}",
            f"{month.monthly_calls:,}",
            f"{month.share:.0%} of {month.quota:,}",
            _duration(month.minutes(calls.full)),
            _duration(month.minutes(calls.nightly)),
            _duration(month.minutes(month.monthly_calls)),
        )
    console.print(table)
    if configured.over:
        console.print(
            f"[yellow]warning:[/] tenant {tenant_id}: {configured.monthly_calls:,} API calls a month would "
            f"pass {configured.max_share:.0%} of the {configured.plan.value} quota ({configured.quota:,}); "
            "fewer runs (ADM_NIGHTLY_CRON, ADM_FULL_REFRESH_CRON), a longer ADM_REVISION_RECHECK_DAYS or a "
            "larger plan bring it down"
        )


def _duration(minutes: float) -> str:
    """Minutes for people: 40 s, 54 min, 2.3 h."""
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"
