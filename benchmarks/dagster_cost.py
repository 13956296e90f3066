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

``--in-process`` measures the job itself instead, as the tests and a run worker run it: a small tenant (150
decisions by default, no latency, emulator in its own process), one first sync, then ``--rounds`` nightly
runs in this process of the sync alone, of the job on an instance in memory and of the job on a SQLite
instance (Dagster's default storage), each kind in turn; it prints each kind's wall and CPU seconds per run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import dagster as dg

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
from pipelines.clients import AdmClientResource
from pipelines.demo import demo_settings
from pipelines.instance_settings import instance_home
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings
from pipelines.sync import SyncServices
from pipelines.tenant_runs import TenantRun, run_directly
from pipelines.warehouse_resource import WarehouseResource


def line(label: str, row: Row) -> str:
    """One run's figures."""
    return f"{label}: wall {row.wall_s:.2f} s, {row.api_calls} calls, {row.note}"


def main() -> None:
    """The CLI's runs, or with ``--in-process`` the job's runs in this process."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-process", action="store_true")
    arguments = parser.parse_args()
    if arguments.in_process:
        in_process(arguments.decisions or IN_PROCESS_DECISIONS, arguments.rounds)
    else:
        cli_runs(arguments.decisions or QUICK_DECISIONS, arguments.rounds)


IN_PROCESS_DECISIONS = 150
IN_PROCESS_SHARE = 0.03
"""With 150 decisions, about the tests' small tenant (60 delegations, 30 documents, 60 users): what a test of
a launch path pays for Dagster."""


def in_process(decisions: int, rounds: int) -> None:
    """A first sync, then ``rounds`` nightly runs of each kind in turn: the sync alone, the job on an
    instance in memory, the job on a SQLite instance."""
    spec = full_scale(decisions, latency_ms=0.0, share=IN_PROCESS_SHARE)
    with EmulatorProcess(spec, WORK / "dagster_cost_in_process" / "emulator.log") as emulator:
        folder = Path(tempfile.mkdtemp(prefix="dagster_cost_"))
        settings = demo_settings(SyncSettings(warehouse=folder / "warehouse.duckdb"), emulator.base_url)
        services = SyncServices(AdmClientResource(settings), WarehouseResource(settings), settings)
        tenant = settings.sync_tenants[0]
        defs = sync_definitions(settings)
        ensure(run_directly(services, tenant))
        print(f"{spec.describe()}; wall / CPU s per nightly run, {rounds} rounds", flush=True)
        with dg.DagsterInstance.ephemeral() as memory, dg.instance_for_test() as sqlite:
            kinds: dict[str, Callable[[], TenantRun]] = {
                "the sync alone": lambda: run_directly(services, tenant),
                "the job, instance in memory": lambda: run_tenant(defs, tenant, memory),
                "the job, SQLite instance": lambda: run_tenant(defs, tenant, sqlite),
            }
            for label, run in kinds.items():
                print(f"{label}: {timed(run, rounds)}", flush=True)


def timed(run: Callable[[], TenantRun], rounds: int) -> str:
    """Each run's wall and CPU seconds, and their medians."""
    figures = []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        ensure(run())
        figures.append((time.perf_counter() - wall, time.process_time() - cpu))
    each = ", ".join(f"{wall:.2f} / {cpu:.2f}" for wall, cpu in figures)
    walls, cpus = zip(*figures, strict=True)
    return f"{each}; median {statistics.median(walls):.2f} / {statistics.median(cpus):.2f}"


def ensure(run: TenantRun) -> None:
    """Stop at a failed run, naming it."""
    if not run.success:
        raise SystemExit(f"run {run.run_id} failed: {run.error}")


def cli_runs(decisions: int, rounds: int) -> None:
    """The first full refresh, then ``rounds`` pairs of nightly runs, without and with ``DAGSTER_HOME``."""
    spec = full_scale(decisions, share=QUICK_SHARE)
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
        for _ in range(rounds):
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
