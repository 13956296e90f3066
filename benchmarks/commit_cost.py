"""What a commit costs, on a copy of a filled warehouse, without the network: the commits of issue 31's
"commits proportional to change".

Run ``python -m benchmarks.commit_cost WAREHOUSE [--changed 0.01] [--repeat 3]`` on a warehouse a
benchmark filled (``data/bench/work/latency/ours.duckdb`` after ``make bench-quick``). Two commits are
staged from the warehouse's own rows, each committed (and published) on a fresh copy of it:

- ``unchanged full``: every live record of every list and its child rows, staged as they are stored, in
  full mode: what a second full refresh of an unchanged tenant commits (revision lists aside).
- ``nightly``: the given share of each list's records with a new content hash, and their child rows, in
  incremental mode: what a nightly run after that change commits.

It prints each commit's wall seconds, the process's CPU seconds during it (every thread's: DuckDB's too)
and the commit and publish phases the run's row records. Run it from two checkouts (``PYTHONPATH``) to
compare code before and after a change on the same data.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from warehouse.catalog import FAMILIES
from warehouse.commit import StagedRun, commit_run
from warehouse.publish_target import PublishTarget
from warehouse.runs import RunRecord
from warehouse.schema import staging_schema
from warehouse.staging import BATCH_ROWS


def columns(table: str, changed: bool) -> str:
    """The select list staging ``table``: its staged columns, the content hash made new when ``changed``."""
    names = staging_schema(table).names
    return ", ".join(
        "'changed-' || content_hash AS content_hash" if changed and name == "content_hash" else f'"{name}"'
        for name in names
    )


def stage(warehouse: Path, folder: Path, share: float | None) -> dict[str, int]:
    """Stage every family's live records (``share`` None) or that share of them with a new content hash,
    with their child rows, as ``<table>.parquet`` in ``folder`` in row groups of the extract's batches (one
    row group of every row, as COPY writes by default, is what no run stages and what a commit reads
    whole); returns the rows staged per table."""
    folder.mkdir(parents=True)
    staged: dict[str, int] = {}
    # Every name below comes from the fixed catalog, never from input.
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for family in FAMILIES.values():
            root = family.root
            live = f"SELECT * FROM {root} WHERE NOT coalesce(is_deleted, FALSE)"  # noqa: S608
            if share is not None:
                live += f" ORDER BY hash(id) LIMIT (SELECT ceil(count(*) * {share}) FROM {root})"  # noqa: S608
            con.execute(f"CREATE TEMP TABLE picked_{root} AS {live}")
            queries = {root: f"SELECT {columns(root, share is not None)} FROM picked_{root}"}  # noqa: S608
            for child in family.children:
                queries[child.table] = (
                    f"SELECT {columns(child.table, False)} FROM {child.table} "  # noqa: S608
                    f"WHERE {child.parent_column} IN (SELECT id FROM picked_{root})"
                )
            for table, query in queries.items():
                path = folder / f"{table}.parquet"
                con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {BATCH_ROWS})")
                found = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()
                staged[table] = int(found[0]) if found else 0
    return staged


def tenant_of(warehouse: Path) -> str:
    """The tenant of the warehouse's first run (a benchmark's warehouse holds one)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        found = con.execute("SELECT tenant_id FROM sync_runs LIMIT 1").fetchone()
    if found is None:
        raise SystemExit(f"{warehouse} has no run")
    return str(found[0])


def timed_commit(warehouse: Path, work: Path, name: str, share: float | None) -> str:
    """Stage, copy the warehouse, commit and publish; one line of figures."""
    folder = work / f"stage-{name}"
    shutil.rmtree(folder, ignore_errors=True)
    tables = stage(warehouse, folder, share)
    copy = work / "warehouse.duckdb"
    shutil.copyfile(warehouse, copy)
    mode = "full" if share is None else "incremental"
    modes = dict.fromkeys(FAMILIES, mode)
    record = RunRecord(f"commit-cost-{name}-{time.time_ns()}", tenant_of(copy), mode, datetime.now(UTC))
    target = PublishTarget(work / "published.duckdb")
    started, cpu = time.perf_counter(), time.process_time()
    commit_run(copy, StagedRun(folder, tables, modes), record, wait_s=60, publish=target)
    wall, spent = time.perf_counter() - started, time.process_time() - cpu
    rows = sum(tables.values())
    phases = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in record.phase_seconds.items())
    return f"{name}: {rows:,} rows staged; wall {wall:.2f} s, CPU {spent:.2f} s; {phases}"


def main() -> None:
    """Time both commits ``--repeat`` times each."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--changed", type=float, default=0.01, help="share of records the nightly changes")
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=arguments.warehouse.parent) as scratch:
        for _ in range(arguments.repeat):
            print(timed_commit(arguments.warehouse, Path(scratch), "unchanged full", None), flush=True)
            print(timed_commit(arguments.warehouse, Path(scratch), "nightly", arguments.changed), flush=True)


if __name__ == "__main__":
    main()
