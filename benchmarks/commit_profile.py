"""Where the time of a run goes, profiled in the first full refresh of a tenant (scenario 1) and in the two
runs whose commit should cost little (issue 31): a second full refresh of an unchanged tenant (scenario 7)
and a nightly run after a 1% change (scenario 3).

Run ``python -m benchmarks.commit_profile [--decisions 20000]``. One emulator (scenario 1's tenant without
latency); ``authority-sync extract --full-refresh`` into a new warehouse, again of the unchanged tenant and,
after `/_admin/mutate` changed 1% of the records, ``authority-sync extract``, each run under pyinstrument
as its own process. Each profile is written as text
to ``data/bench/profile_<run>.txt`` (the call tree of the project's code and DuckDB's statements), and the
run's phases as its ``sync_runs`` row records them are printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchmarks.contenders import OursConfig, committed_run, fresh
from benchmarks.harness import BIN, OUTPUT, EmulatorProcess
from benchmarks.run import CONCURRENCY, UNLIMITED_RATE, WORK, full_scale, one_percent


def profiled(emulator: EmulatorProcess, warehouse: Path, arguments: list[str], name: str) -> Path:
    """``authority-sync <arguments>`` under pyinstrument; returns the text profile's path."""
    out = OUTPUT / f"profile_{name}.txt"
    env = OursConfig(CONCURRENCY, UNLIMITED_RATE).env(emulator, warehouse)
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    command = [sys.executable, "-m", "pyinstrument", "-r", "text", "-o", str(out), "--no-color"]
    command += ["-p", "processor_options.filter_threshold=0.005", "--from-path", "authority-sync"]
    subprocess.run([*command, *arguments], env=env, check=True, capture_output=True)
    run = committed_run(warehouse)
    phases = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in run.phase_seconds.items())
    print(f"{name}: {run.rows:,} rows; {phases}; profile in {out}")
    return out


def main() -> None:
    """Profile the first full refresh, the second, and the nightly run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=20_000)
    spec = full_scale(parser.parse_args().decisions, latency_ms=0.0)
    work = WORK / "commit_profile"
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        warehouse = fresh(work / "ours.duckdb")
        profiled(emulator, warehouse, ["extract", "--full-refresh"], "first_full")
        profiled(emulator, warehouse, ["extract", "--full-refresh"], "second_full")
        emulator.mutate(one_percent(spec))
        profiled(emulator, warehouse, ["extract"], "nightly")


if __name__ == "__main__":
    main()
