"""Issue 31's question for scenario 7, measured: what would a full refresh save if each record whose text is
the one the warehouse holds were neither flattened nor staged again, its current rows standing in for the
staged ones at the commit? And does the warehouse come out the same?

Run ``python -m benchmarks.unchanged_records [--decisions 20000] [--repeats 2] [--change]``. One emulator
process (scenario 1's tenant, 50 ms latency), a first full refresh in this process as the command line runs
it, then (``--change``: after `/_admin/mutate` changed 1% of the records) ``repeats`` times a second full
refresh of a copy of that warehouse in two ways:

- **today's**: every record validated, flattened and staged;
- **reusing**: each list's ``id -> md5(raw)`` of its current rows is read first (timed apart); every record
  is validated and its cursor followed as today, but one whose text has the stored MD5 is neither flattened,
  offered to the revision reads nor staged, only noted. At the commit each staged table of its family is a
  view of the staged file and the current rows of the noted records (`warehouse.merge.load_staged` wrapped),
  so the merge compares them as it compares staged rows.

Each run prints its wall seconds and phases. Then the two warehouses of the last pair are compared table by
table, every column but the instants and run ids the two runs stamp differently, and their runs' row counts.
A prototype to choose by, not product code: docs/benchmarks.md (session 37) lists what a product path needs
besides (a fingerprint of what derives rows, the checks, a commit that verifies what it reuses).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

import pipelines.extract
import warehouse.commit
from benchmarks.contenders import OursConfig, committed_run, fresh
from benchmarks.harness import DEMO, EmulatorProcess
from benchmarks.run import CONCURRENCY, UNLIMITED_RATE, WORK, full_scale, one_percent
from models.base import canonical_id
from warehouse.catalog import LISTS
from warehouse.rows import TableRows
from warehouse.schema import MERGE_COLUMNS, staging_schema

TENANT = DEMO["tenant_id"]
STAMPED = (frozenset(MERGE_COLUMNS) - {"row_digest"}) | {
    "valid_from",
    "valid_to",
    "ended_run_id",
    "first_seen_at",
    "changed_at",
}
"""Columns two runs of the same records fill differently: the instants and run ids the merge stamps (its
`MERGE_COLUMNS` but the digest, which is compared), a history version's span, a revision's and a change's
instant."""
RUN_RECORDS = frozenset({"sync_runs", "warehouse_meta", "revision_rechecks"})
"""Tables about the runs themselves: compared by their runs' row counts instead."""
_COMMIT = vars(warehouse.commit)
"""The commit module's names: its own binding of `load_staged` is the one a commit calls."""


class Reuse:
    """The two pieces the reusing way puts in place of the sync's own, and what they noted."""

    def __init__(self, digests: dict[str, dict[str, str]]) -> None:
        self.digests = digests
        self.reused: dict[str, set[str]] = {}
        self._staged = pipelines.extract._staged
        self._load = _COMMIT["load_staged"]

    def staged(self, request: Any, entry: Any, report: Any, since: Any, named: Any, record: Any) -> TableRows:
        """The record's rows, or none (noted) when its text is the stored one."""
        record_id = canonical_id(getattr(record, "id", None) or "")
        held = self.digests.get(entry.name, {}).get(record_id)
        text = record.raw_json().encode()
        if held is not None and held == hashlib.md5(text, usedforsecurity=False).hexdigest():
            pipelines.extract._follow_cursor(request, report, since, record)
            self.reused.setdefault(entry.name, set()).add(record_id)
            return {}
        return self._staged(request, entry, report, since, named, record)

    def load_staged(self, con: duckdb.DuckDBPyConnection, files: dict[str, Path], *, copied: bool) -> None:
        """The staged files as views (never copied: ``copied`` is ignored), each family's joined by the noted
        records' rows."""
        self._load(con, files, copied=False)
        for name, ids in self.reused.items():
            family = LISTS[name].family
            noted = f"CREATE OR REPLACE TEMP TABLE reused_{name} AS SELECT unnest(?::VARCHAR[]) AS id"
            con.execute(noted, [sorted(ids)])
            for table in family.tables:
                key = "id" if table == family.root else family.parent_column(table)
                columns = ", ".join(f'"{column}"' for column in staging_schema(table).names)
                stored = (
                    f"SELECT {columns} FROM {table} WHERE tenant_id = '{TENANT}' "  # noqa: S608 - the demo tenant
                    f"AND {key} IN (SELECT id FROM reused_{name})"
                )
                if table in files:
                    staged = f"SELECT * FROM read_parquet('{files[table]}')"  # noqa: S608 - our staging
                    stored = f"{staged} UNION ALL BY NAME {stored}"
                con.execute(f"CREATE OR REPLACE TEMP VIEW stg_{table} AS {stored}")

    def install(self) -> Callable[[], None]:
        """Put both pieces in place; returns what puts the sync's own back."""
        pipelines.extract._staged = self.staged
        _COMMIT["load_staged"] = self.load_staged

        def restore() -> None:
            pipelines.extract._staged = self._staged
            _COMMIT["load_staged"] = self._load

        return restore


def stored_digests(path: Path) -> dict[str, dict[str, str]]:
    """Each list's current (not deleted) rows of the tenant: id -> MD5 of ``raw``."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            name: dict(
                con.execute(
                    f"SELECT id, md5(raw) FROM {name} "  # noqa: S608 - the catalog's names
                    "WHERE tenant_id = ? AND NOT coalesce(is_deleted, FALSE)",
                    [TENANT],
                ).fetchall()
            )
            for name in LISTS
        }
    finally:
        con.close()


def full_refresh(path: Path) -> str:
    """One full refresh of the demo tenant into ``path``: its wall seconds and phases, as a line."""
    from pipelines.settings import load_settings
    from pipelines.tenant_runs import tenant_runner

    os.environ["ADM_WAREHOUSE"] = str(path)
    started = time.perf_counter()
    with tenant_runner(load_settings()) as run:
        outcome = run(TENANT, full_refresh=True)
    if not outcome.success:
        raise SystemExit(f"the full refresh of {path} failed: {outcome.error}")
    wall = time.perf_counter() - started
    phases = ", ".join(
        f"{phase} {seconds:.2f}" for phase, seconds in committed_run(path).phase_seconds.items()
    )
    return f"{wall:5.2f} s ({phases})"


def differences(today: Path, reusing: Path) -> tuple[int, list[str]]:
    """The tables compared, and a line for each whose rows differ (every column but `STAMPED`), or whose
    runs' row counts differ."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{today}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{reusing}' AS b (READ_ONLY)")
    tables = [
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'a'"
        ).fetchall()
        if name not in RUN_RECORDS
    ]
    found = []
    for table in tables:
        columns = ", ".join(
            f'"{column}"'
            for (column,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' AND table_name = ?",
                [table],
            ).fetchall()
            if column not in STAMPED
        )
        only = [
            con.execute(
                f"SELECT count(*) FROM (SELECT {columns} FROM {one}.{table} "  # noqa: S608 - catalog names
                f"EXCEPT ALL SELECT {columns} FROM {other}.{table})"
            ).fetchone()
            for one, other in (("a", "b"), ("b", "a"))
        ]
        if any(row and row[0] for row in only):
            found.append(f"{table}: rows only today's {only[0]}, only reusing's {only[1]}")
    counts = con.execute(
        "SELECT (SELECT row_counts FROM a.sync_runs ORDER BY finished_at DESC LIMIT 1), "
        "(SELECT row_counts FROM b.sync_runs ORDER BY finished_at DESC LIMIT 1)"
    ).fetchone()
    if counts is None or counts[0] != counts[1]:
        found.append(f"the runs' row counts: {counts}")
    return len(tables), found


def main() -> None:
    """The first full refresh, then each way's second, ``--repeats`` times; then the comparison."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--change", action="store_true", help="change 1%% of the records before the second")
    options = parser.parse_args()
    work = WORK / "unchanged_records"
    spec = full_scale(options.decisions)
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        first = fresh(work / "first.duckdb")
        os.environ.clear()
        os.environ.update(OursConfig(CONCURRENCY, UNLIMITED_RATE).env(emulator, first))
        print(f"first full refresh:  {full_refresh(first)}")
        if options.change:
            emulator.mutate(one_percent(spec))
        today, reusing = work / "today.duckdb", work / "reusing.duckdb"
        for _ in range(options.repeats):
            shutil.copyfile(first, fresh(today))
            print(f"today's second:      {full_refresh(today)}")
            shutil.copyfile(first, fresh(reusing))
            started = time.perf_counter()
            reuse = Reuse(stored_digests(reusing))
            read = time.perf_counter() - started
            restore = reuse.install()
            try:
                line = full_refresh(reusing)
            finally:
                restore()
            noted = sum(map(len, reuse.reused.values()))
            print(f"reusing second:      {line}; {noted:,} records reused, digests read in {read:.2f} s")
    compared, found = differences(today, reusing)
    print(f"the last pair's warehouses: {compared} tables compared; " + ("; ".join(found) or "no difference"))


if __name__ == "__main__":
    main()
