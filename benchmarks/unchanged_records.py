"""Issue 31's question for scenario 7, measured: how much of a second full refresh of an unchanged tenant
would it save to skip flattening and staging each record whose text is the one the warehouse holds?

Run ``python -m benchmarks.unchanged_records [--decisions 20000] [--repeats 2]``. One emulator process
(scenario 1's tenant, 50 ms latency), a first full refresh in this process as the command line runs it, then,
``repeats`` times, a second full refresh's extract in two ways:

- **today's**: every record validated, flattened and staged;
- **skipping**: every record validated and its cursor followed, but one whose text (``raw``) has the MD5 of
  the current row of its id, read from the warehouse before the run (the reading timed apart), is neither
  flattened, offered to the revision reads nor staged.

Each extract stops the run before its checks and commit (the run fails and the warehouse stays as it was),
so the figures are the extract's alone: wall seconds and the process's CPU seconds. A measurement to choose
by, not product code: the skipping run stages only the changed records, which today's commit would read as a
tenant that lost the others (docs/benchmarks.md, session 37, lists what a product path needs besides).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

import pipelines.extract
import pipelines.sync
from benchmarks.contenders import OursConfig, fresh
from benchmarks.harness import DEMO, EmulatorProcess
from benchmarks.run import CONCURRENCY, UNLIMITED_RATE, WORK, full_scale
from warehouse.catalog import LISTS
from warehouse.rows import TableRows

Digests = dict[str, dict[str, str]]
"""List name -> id -> MD5 of the current row's ``raw``."""


class _StopAfterExtractError(Exception):
    """Raised after the extract, to end the run before its checks and commit."""


def stored_digests(warehouse: Path) -> Digests:
    """Each list's current (not deleted) rows: id -> MD5 of ``raw``, as DuckDB computes it."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {
            name: dict(
                con.execute(
                    f"SELECT id, md5(raw) FROM {name} WHERE NOT coalesce(is_deleted, FALSE)"  # noqa: S608
                ).fetchall()
            )
            for name in LISTS
        }
    finally:
        con.close()


def skipping(digests: Digests) -> Callable[..., TableRows]:
    """`pipelines.extract._staged` that returns no rows for a record whose text is the stored one."""
    staged = pipelines.extract._staged

    def staged_unless_stored(
        request: Any, entry: Any, report: Any, since: Any, named: Any, record: Any
    ) -> TableRows:
        held = digests.get(entry.name, {}).get(getattr(record, "id", None) or "")
        if (
            held is not None
            and held == hashlib.md5(record.raw_json().encode(), usedforsecurity=False).hexdigest()
        ):
            pipelines.extract._follow_cursor(request, report, since, record)
            return {}
        return staged(request, entry, report, since, named, record)

    return staged_unless_stored


@contextmanager
def extract_only(seconds: list[float]) -> Iterator[None]:
    """Runs of the block stop after their extract, whose wall and CPU seconds are appended to ``seconds``."""
    names = vars(pipelines.sync)  # the sync's own binding of `extract_tenant`
    extract = names["extract_tenant"]

    def measured(*arguments: Any, **options: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        extract(*arguments, **options)
        seconds.extend((time.perf_counter() - wall, time.process_time() - cpu))
        raise _StopAfterExtractError

    names["extract_tenant"] = measured
    try:
        yield
    finally:
        names["extract_tenant"] = extract


def full_refresh() -> bool:
    """One full refresh of the demo tenant with the process's settings; whether it succeeded."""
    from pipelines.settings import load_settings
    from pipelines.tenant_runs import tenant_runner

    with tenant_runner(load_settings()) as run:
        return run(DEMO["tenant_id"], full_refresh=True).success


def extract_seconds(staged: Callable[..., TableRows]) -> tuple[float, float]:
    """Wall and CPU seconds of a full refresh's extract with ``staged`` in place of the extract's own."""
    seconds: list[float] = []
    original = pipelines.extract._staged
    pipelines.extract._staged = staged
    # The stopped run logs its failure with a traceback: not this benchmark's output.
    logging.disable(logging.ERROR)
    try:
        with extract_only(seconds):
            full_refresh()
    finally:
        logging.disable(logging.NOTSET)
        pipelines.extract._staged = original
    wall, cpu = seconds
    return wall, cpu


def main() -> None:
    """The first full refresh, then each way's extract of the second, ``--repeats`` times."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    options = parser.parse_args()
    work = WORK / "unchanged_records"
    with EmulatorProcess(full_scale(options.decisions), work / "emulator.log") as emulator:
        warehouse = fresh(work / "warehouse.duckdb")
        os.environ.clear()
        os.environ.update(OursConfig(CONCURRENCY, UNLIMITED_RATE).env(emulator, warehouse))
        if not full_refresh():
            raise SystemExit("the first full refresh failed")
        for _ in range(options.repeats):
            wall, cpu = extract_seconds(pipelines.extract._staged)
            print(f"today's extract:   {wall:5.2f} s wall, {cpu:5.2f} s CPU")
            started = time.perf_counter()
            digests = stored_digests(warehouse)
            read = time.perf_counter() - started
            wall, cpu = extract_seconds(skipping(digests))
            held = sum(map(len, digests.values()))
            print(f"skipping extract:  {wall:5.2f} s wall, {cpu:5.2f} s CPU", end=" ")
            print(f"({held:,} digests read in {read:.2f} s)")


if __name__ == "__main__":
    main()
