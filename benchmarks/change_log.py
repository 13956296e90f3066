"""v_changes query times on a 20k-decision tenant after 30 nightly runs: the change log computed from the
whole history on every query (migration 0022's view, before) against the log each commit appends to
(migration 0042, now).

A full refresh of the emulator's demo tenant at ``--decisions`` decisions, then ``--nights`` nightly runs,
each after the service's own mutations (decisions, users and delegations updated). Then two queries, each
timed on both: one record's changes, and the last 30 days' changes; plus what the commit now spends.

Run: ``python -m benchmarks.change_log [--decisions 20000] [--nights 30]`` (minutes on two cores).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
import uuid
from importlib import resources as package_files
from pathlib import Path

import duckdb
import httpx

from emulator.scale import DEMO_TENANT_ID, Scale
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from pipelines.bindings import resources
from pipelines.demo import demo_settings
from pipelines.settings import SyncSettings
from pipelines.sync import SyncRequest, SyncServices, sync_tenant

MUTATION = {"decisionsUpdated": 20, "usersUpdated": 10, "delegationsUpdated": 5}
"""What the service changes between two nights."""

QUERIES = {
    "one record": "SELECT * FROM {} WHERE id = ?",
    "30 days": "SELECT * FROM {} WHERE changed_at > now() - INTERVAL 30 DAY",
}


def sync(settings: SyncSettings, full_refresh: bool) -> float:
    """One run of the demo tenant (free of Dagster); returns its commit's seconds."""
    bound = resources(settings)
    services = SyncServices(bound["adm"], bound["warehouse"], bound["sync_policy"])
    request = SyncRequest(DEMO_TENANT_ID, f"run-{uuid.uuid4()}", full_refresh=full_refresh)
    return sync_tenant(request, services).record.phase_seconds["commit"]


def recomputed_view(con: duckdb.DuckDBPyConnection) -> str:
    """Migration 0022's v_changes and the macros it calls, as temporary objects: the name of the view."""
    sql = package_files.files("warehouse").joinpath("migrations/0022_as_of.sql").read_text(encoding="utf-8")
    start = sql.index("CREATE MACRO record_cells")
    old = (
        sql[start:]
        .replace("CREATE MACRO ", "CREATE TEMP MACRO old_")
        .replace("CREATE VIEW ", "CREATE TEMP VIEW old_")
    )
    old = re.sub(r"\b(record_cells|item_cells)\(", r"old_\1(", old)
    con.execute(old)
    return "old_v_changes"


def timed(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> float:
    """The median of three runs of ``sql``, in milliseconds."""
    seconds = []
    for _ in range(3):
        started = time.perf_counter()
        con.execute(sql, params).fetchall()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1000


def main() -> None:
    """Sync, then print the query times before and after."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--nights", type=int, default=30)
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="change-log-"))
    options = EmulatorOptions(scale=Scale(decisions=arguments.decisions))
    with EmulatorServer(options) as server:
        settings = demo_settings(SyncSettings(warehouse=folder / "wh.duckdb"), server.base_url)
        started = time.perf_counter()
        sync(settings, full_refresh=True)
        print(f"full refresh of {arguments.decisions:,} decisions: {time.perf_counter() - started:.0f} s")
        commits = []
        for _ in range(arguments.nights):
            httpx.post(f"{server.base_url}/_admin/mutate", json=MUTATION).raise_for_status()
            commits.append(sync(settings, full_refresh=False))
    print(
        f"{arguments.nights} nightly runs: commit {statistics.median(commits):.2f} s (median, log appended)"
    )
    with duckdb.connect(str(settings.publish_file), read_only=True) as con:
        old = recomputed_view(con)
        logged = con.execute("SELECT count(*), count(DISTINCT run_id) FROM change_log").fetchall()[0]
        record = con.execute(
            "SELECT id FROM change_log WHERE entity = 'decisions' GROUP BY id ORDER BY count(*) DESC LIMIT 1"
        ).fetchall()[0][0]
        print(f"change log: {logged[0]:,} rows from {logged[1]} runs")
        for name, query in QUERIES.items():
            params: list[object] = [record] if "?" in query else []
            before = timed(con, query.format(old), params)
            after = timed(con, query.format("v_changes"), params)
            print(f"{name:>10}: recomputed per query {before:8.1f} ms   change log {after:6.1f} ms")


if __name__ == "__main__":
    main()
