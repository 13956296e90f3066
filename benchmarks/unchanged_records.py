"""What a second full refresh saves by not deriving again the records read unchanged (warehouse/unchanged.py),
and whether the warehouse comes out the same.

Run ``python -m benchmarks.unchanged_records [--decisions 20000] [--repeats 2] [--change]``. One emulator
process (scenario 1's tenant, 50 ms latency), a first full refresh in this process as the command line runs
it, then (``--change``: after `/_admin/mutate` changed 1% of the records) ``repeats`` times a second full
refresh of a copy of that warehouse in two ways:

- **deriving**: ``ADM_REUSE_MIN_RECORDS`` above every list, so every record is validated, derived and staged;
- **reusing**: the default, so a record whose text and derivation are those of its stored rows is only
  noted, and its stored rows are staged after the list's read.

Each run prints its wall seconds and phases, and how many records it reused. Then the two warehouses of the
last pair are compared table by table, every column but the instants and run ids the two runs stamp
differently, and their runs' row counts (`tests.warehouse_compare`). Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from benchmarks.contenders import OursConfig, committed_run, fresh
from benchmarks.harness import DEMO, EmulatorProcess
from benchmarks.run import CONCURRENCY, UNLIMITED_RATE, WORK, full_scale, one_percent
from tests.warehouse_compare import differences

TENANT = DEMO["tenant_id"]
NEVER = str(10**9)
"""``ADM_REUSE_MIN_RECORDS`` of the deriving way: above every list."""


def full_refresh(path: Path, reuse_min_records: str | None) -> str:
    """One full refresh of the demo tenant into ``path`` (``reuse_min_records``: the setting, None for its
    default): its wall seconds, phases and records reused, as a line."""
    from pipelines.settings import load_settings
    from pipelines.tenant_runs import tenant_runner

    os.environ["ADM_WAREHOUSE"] = str(path)
    os.environ.pop("ADM_REUSE_MIN_RECORDS", None)
    if reuse_min_records is not None:
        os.environ["ADM_REUSE_MIN_RECORDS"] = reuse_min_records
    started = time.perf_counter()
    with tenant_runner(load_settings()) as run:
        outcome = run(TENANT, full_refresh=True)
    if not outcome.success:
        raise SystemExit(f"the full refresh of {path} failed: {outcome.error}")
    wall = time.perf_counter() - started
    record = committed_run(path)
    phases = ", ".join(f"{phase} {seconds:.2f}" for phase, seconds in record.phase_seconds.items())
    return f"{wall:5.2f} s ({phases}); reused {sum(record.records_reused.values()):,} records"


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
        print(f"first full refresh:  {full_refresh(first, None)}")
        if options.change:
            emulator.mutate(one_percent(spec))
        deriving, reusing = work / "deriving.duckdb", work / "reusing.duckdb"
        for _ in range(options.repeats):
            shutil.copyfile(first, fresh(deriving))
            print(f"deriving second:     {full_refresh(deriving, NEVER)}")
            shutil.copyfile(first, fresh(reusing))
            print(f"reusing second:      {full_refresh(reusing, None)}")
    compared, found = differences(deriving, reusing)
    print(f"the last pair's warehouses: {compared} tables compared; " + ("; ".join(found) or "no difference"))


if __name__ == "__main__":
    main()
