"""What the CLI prints: run summaries and query results as rich tables. Nothing here prints secrets: runs
are identified by tenant and run id, the service by its address."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from warehouse.reads import read_only


def run_summary(console: Console, warehouse: Path, run_ids: list[str]) -> None:
    """One table per committed run: mode, API calls, 429s and rows changed per table."""
    with read_only(warehouse) as con:
        if con is None:
            return
        rows = con.execute(
            "SELECT tenant_id, run_id, mode, api_calls_total, rate_limited_429, retries, row_counts, "
            "warnings, finished_at - started_at FROM sync_runs WHERE list_contains(?, run_id) "
            "ORDER BY finished_at",
            [run_ids],
        ).fetchall()
    for tenant, run_id, mode, calls, limited, retries, counts, warnings, took in rows:
        table = Table(
            title=f"tenant {tenant} | {mode} run {run_id[:8]} | {calls} API calls, {limited} x 429, "
            f"{retries} retries, {took.total_seconds():.1f} s"
        )
        for column in ("table", "inserted", "updated", "unchanged", "deleted"):
            table.add_column(column, justify="left" if column == "table" else "right")
        for name, count in json.loads(counts).items():
            table.add_row(name, *(str(count[key]) for key in ("inserted", "updated", "unchanged", "deleted")))
        console.print(table)
        for warning in json.loads(warnings):
            console.print(f"[yellow]warning:[/] {warning}")


def query_results(console: Console, con: duckdb.DuckDBPyConnection, title: str, sql: str) -> None:
    """Print a query and its result."""
    relation = con.sql(sql)
    table = Table(title=title, caption=" ".join(sql.split()))
    for column in relation.columns:
        table.add_column(column)
    for row in relation.fetchall():
        table.add_row(*(_cell(value) for value in row))
    console.print(table)


def _cell(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return "" if value is None else str(value)
