"""What Dagster's record of a CLI run costs (issue 31: "the Dagster record of a CLI run costs under 0.3 s").

Run ``python -m benchmarks.dagster_cost [--decisions 5000] [--rounds 3]``. One emulator (the tenant of
``make bench-quick``, 50 ms latency); a first full refresh fills the warehouse. Then, each round, 1% of the
records change (scenario 3's change) and one nightly ``authority-sync extract`` runs as a process without
``DAGSTER_HOME`` (the sync alone), and after another such change one with ``DAGSTER_HOME`` naming a fresh
instance folder with the project's instance settings (``pipelines/dagster.yaml``: Dagster's default SQLite
storage). With ``DAGSTER_HOME`` the CLI runs the tenant's sync as the code location's Dagster job, so the
run shows in that instance's history; the difference in wall time is what that record costs.

Each line prints the run's wall time, its API calls and the phases its ``sync_runs`` row records. The
figures are measured, not asserted: ``make test`` does not run this.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from benchmarks.contenders import OursConfig, fresh, run_ours
from benchmarks.harness import EmulatorProcess, Row
from benchmarks.run import (
    CONCURRENCY,
    QUICK_DECISIONS,
    QUICK_SHARE,
    UNLIMITED_RATE,
    WORK,
    full_scale,
    one_percent,
)
from pipelines.instance_settings import instance_home


def line(label: str, row: Row) -> str:
    """One run's figures."""
    return f"{label}: wall {row.wall_s:.2f} s, {row.api_calls} calls, {row.note}"


def main() -> None:
    """The first full refresh, then ``--rounds`` pairs of nightly runs, without and with ``DAGSTER_HOME``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=QUICK_DECISIONS)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    spec = full_scale(arguments.decisions, share=QUICK_SHARE)
    work = WORK / "dagster_cost"
    config = OursConfig(CONCURRENCY, UNLIMITED_RATE)
    walls: dict[str, list[float]] = {"without DAGSTER_HOME": [], "with DAGSTER_HOME": []}
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        warehouse = fresh(work / "ours.duckdb")
        first = run_ours(emulator, warehouse, config, full_refresh=True)
        if first.note.startswith("exit"):
            raise SystemExit(f"the first full refresh failed: {first.note}")
        print(f"{spec.describe()}; first full refresh {first.wall_s:.1f} s", flush=True)
        home = instance_home(fresh(work / "dagster_home"))
        for _ in range(arguments.rounds):
            for label, dagster_home in (("without DAGSTER_HOME", None), ("with DAGSTER_HOME", home)):
                emulator.mutate(one_percent(spec))
                row = run_ours(
                    emulator, warehouse, replace(config, dagster_home=dagster_home), full_refresh=False
                )
                if row.note.startswith("exit"):
                    raise SystemExit(line(label, row))
                walls[label].append(row.wall_s)
                print(line(label, row), flush=True)
    medians = {label: statistics.median(values) for label, values in walls.items()}
    cost = medians["with DAGSTER_HOME"] - medians["without DAGSTER_HOME"]
    print(
        f"median nightly run: {medians['without DAGSTER_HOME']:.2f} s without DAGSTER_HOME, "
        f"{medians['with DAGSTER_HOME']:.2f} s with it: the Dagster record costs {cost:.2f} s (target 0.3 s)"
    )


if __name__ == "__main__":
    main()
