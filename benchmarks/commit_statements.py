"""Where a commit's time goes, statement by statement: a tenant's first full refresh, then (with
``--nightly``) an incremental run after 1% of the records changed, each statement of the commit's connection
timed.

Run ``python -m benchmarks.commit_statements [--decisions 100000] [--nightly] [--top 15]``. One emulator
process (scenario 1's tenant without latency); the sync runs in this process as the command line runs it
without ``DAGSTER_HOME`` (`pipelines.tenant_runs.tenant_runner`), into a new warehouse under
``data/bench/work/commit_statements``. Arrow's pool aside: the benchmark's own modules load pyarrow before
the ``pipelines`` package chooses it (`pipelines.process_memory`); the statements are DuckDB's. Each run
prints its statements' count and seconds, then the costliest ones. Figures of 2026-11-28 in
docs/benchmarks.md ("Arrow's memory pool": a first commit at 100,000 decisions).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

import warehouse.commit
from benchmarks.contenders import OursConfig, fresh
from benchmarks.harness import DEMO, EmulatorProcess
from benchmarks.run import CONCURRENCY, UNLIMITED_RATE, WORK, full_scale, one_percent


@dataclass
class Timed:
    """A commit connection whose ``execute`` notes each statement's seconds; anything else is the
    connection's own (DuckDB's connection class cannot be patched, so it is wrapped)."""

    con: duckdb.DuckDBPyConnection
    seconds: list[tuple[float, str]] = field(default_factory=list)

    def execute(self, sql: str, *arguments: Any) -> duckdb.DuckDBPyConnection:
        """The connection's ``execute``, timed."""
        start = time.perf_counter()
        result = self.con.execute(sql, *arguments)
        self.seconds.append((time.perf_counter() - start, " ".join(sql.split())))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


STATEMENTS: list[tuple[float, str]] = []
"""Every statement the commits of this process ran, with its seconds."""
_connected = warehouse.commit.connected


@contextmanager
def _timed_connected(*arguments: Any, **options: Any) -> Iterator[Timed]:
    """`warehouse.commit.connected`, its connection timed into `STATEMENTS`."""
    with _connected(*arguments, **options) as con:
        timed = Timed(con)
        try:
            yield timed
        finally:
            STATEMENTS.extend(timed.seconds)


def timed_run(name: str, full_refresh: bool, top: int) -> None:
    """One sync of the demo tenant with the process's settings; prints its statements."""
    from pipelines.settings import load_settings
    from pipelines.tenant_runs import tenant_runner

    STATEMENTS.clear()
    start = time.perf_counter()
    with tenant_runner(load_settings()) as run:
        outcome = run(DEMO["tenant_id"], full_refresh=full_refresh)
    if not outcome.success:
        raise SystemExit(f"{name}: the run failed: {outcome.error}")
    total = sum(seconds for seconds, _ in STATEMENTS)
    print(f"{name}: run {time.perf_counter() - start:.1f} s; {len(STATEMENTS)} statements, {total:.2f} s")
    for seconds, sql in sorted(STATEMENTS, reverse=True)[:top]:
        print(f"  {seconds:7.3f}  {sql[:140]}")


def main() -> None:
    """Time the first full refresh's statements, and the nightly run's if asked."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--nightly", action="store_true", help="also a run after a 1%% change")
    parser.add_argument("--top", type=int, default=15, help="statements printed per run")
    options = parser.parse_args()
    spec = full_scale(options.decisions, latency_ms=0.0)
    work = WORK / "commit_statements"
    # The commit module looks `connected` up when it commits: every commit of this process is timed.
    warehouse.commit.connected = _timed_connected  # type: ignore[assignment]
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        # Without DAGSTER_HOME (`base_env`): the run is the sync alone, as the command line runs it.
        env = OursConfig(CONCURRENCY, UNLIMITED_RATE).env(emulator, fresh(work / "warehouse.duckdb"))
        os.environ.clear()
        os.environ.update(env)
        timed_run("first full refresh", True, options.top)
        if options.nightly:
            emulator.mutate(one_percent(spec))
            timed_run("nightly after a 1% change", False, options.top)


if __name__ == "__main__":
    main()
