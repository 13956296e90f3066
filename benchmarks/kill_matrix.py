"""The kill matrix: a full refresh killed (SIGKILL) at points through its run, then what the warehouse and
the next run make of it.

For each point: the warehouse must open (offline) holding exactly the state before the killed run; the
next run must succeed, mark the killed run ``killed`` with its calls, and spend only the list pages plus
the revision lists the killed run had not fetched (resume), against the whole tenant again without resume
(``ADM_RESUME_HOURS=0``, how every rerun behaved before issue 18).

With ``--sigterm``: a full refresh stopped by SIGTERM at a fifth of its calls, under the CLI and under
``dagster job execute``: the calls made after the signal, how long the process took to end, what its row
says, and the calls of the rerun (which resumes from the journal) against those of a whole run.

    .venv/bin/python -m benchmarks.kill_matrix            # about 3 minutes
    .venv/bin/python -m benchmarks.kill_matrix --sigterm  # about 2 minutes
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from benchmarks.harness import BIN, CLI, OUTPUT, EmulatorProcess, EmulatorSpec, base_env
from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN

SPEC = EmulatorSpec(decisions=2_000, delegations=600, documents=300, users=300, latency_ms=20)
POINTS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9)
"""Where in the reference run's wall time the kill falls."""
DATA_TABLES = ("decisions", "delegations", "users", "groups", "decision_documents", "delegation_revisions")


@dataclass(frozen=True)
class Outcome:
    """What one kill left and what the run after it did."""

    point: float
    opened: bool
    state: str
    """old (exactly the warehouse before), new (the run had committed before the kill) or HALF."""
    row: str
    """The killed run's row after the next run: killed, or none when it died before writing one."""
    rerun_ok: bool
    rerun_calls: int
    rerun_s: float


def env(server: EmulatorProcess, warehouse: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment for one run against the benchmark emulator."""
    return {
        **base_env(),
        "ADM_BASE_URL": server.base_url,
        "ADM_TOKEN": DEMO_TOKEN,
        "ADM_TENANTS": DEMO_TENANT_ID,
        "ADM_WAREHOUSE": str(warehouse),
        "ADM_RATE_PER_MINUTE": "60000",
        **extra,
    }


def calls(server: EmulatorProcess) -> int:
    return sum(server.stats()["requests"].values())


def fingerprint(path: Path) -> list[object]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [con.execute(f"SELECT count(*), sum(hash(r)) FROM {t} r").fetchone() for t in DATA_TABLES]  # noqa: S608


def timed_run(command: list[str], environment: dict[str, str]) -> tuple[bool, float]:
    started = time.monotonic()
    done = subprocess.run(command, env=environment, capture_output=True, check=False)
    return done.returncode == 0, time.monotonic() - started


def kill_at(
    point: float, reference_s: float, server: EmulatorProcess, base: Path, folder: Path, **extra: str
) -> Outcome:
    """Copy the base warehouse, start a full refresh, kill it at ``point`` of the reference wall time,
    then inspect the file and run again."""
    warehouse = folder / f"kill-{point}" / "warehouse.duckdb"
    shutil.rmtree(warehouse.parent, ignore_errors=True)
    warehouse.parent.mkdir(parents=True)
    shutil.copyfile(base, warehouse)
    environment = env(server, warehouse, **extra)
    victim = subprocess.Popen([CLI, "extract", "--full-refresh"], env=environment, stdout=subprocess.DEVNULL)
    time.sleep(point * reference_s)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    opened, state = inspect(warehouse, base)
    server.reset_stats()
    ok, seconds = timed_run([CLI, "extract", "--full-refresh"], environment)
    return Outcome(point, opened, state, killed_row(warehouse), ok, calls(server), seconds)


def inspect(warehouse: Path, base: Path) -> tuple[bool, str]:
    """Whether the killed run's warehouse opens, and which state it holds."""
    try:
        now, before = fingerprint(warehouse), fingerprint(base)
        committed = runs(warehouse).count("succeeded") > runs(base).count("succeeded")
    except duckdb.Error:
        return False, "-"
    if now == before:
        return True, "old"
    return True, "new" if committed else "HALF"


def runs(path: Path) -> list[str]:
    """The statuses of the warehouse's runs, oldest first."""
    with duckdb.connect(str(path), read_only=True) as con:
        found = con.execute("SELECT status FROM sync_runs ORDER BY started_at").fetchall()
    return [str(row[0]) for row in found]


def killed_row(warehouse: Path) -> str:
    """What the killed run's row says once the next run ran: the base run, maybe the killed run, the rerun."""
    statuses = runs(warehouse)
    if "killed" in statuses:
        return "killed"
    return "succeeded (committed first)" if len(statuses) == 3 else "none (died before writing it)"


SIGTERM_AT = 0.2
"""Where in the reference run's calls SIGTERM falls."""
STOPPED_WITHIN_S = 5.0
"""The goal for a stopped run's process to end (a supervisor's grace period is short)."""


@dataclass(frozen=True)
class Stopped:
    """What one SIGTERM did, and what the run after it spent."""

    path: str
    signalled_at: int
    calls_after: int
    exit_s: float
    row: str
    rerun_calls: int


def sigterm_at(
    path: str, command: list[str], full_calls: int, server: EmulatorProcess, folder: Path
) -> Stopped:
    """Start a first full refresh into a new warehouse with ``command`` (``full_calls``, as the reference
    run; a full refresh of a synced tenant reuses its revision lists and makes few calls), send SIGTERM
    once it has made `SIGTERM_AT` of them, then run the CLI's full refresh again."""
    warehouse = folder / f"sigterm-{path}" / "warehouse.duckdb"
    shutil.rmtree(warehouse.parent, ignore_errors=True)
    warehouse.parent.mkdir(parents=True)
    home = warehouse.parent.resolve() / "dagster_home"
    home.mkdir()
    environment = env(server, warehouse, DAGSTER_HOME=str(home))
    server.reset_stats()
    victim = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while calls(server) < SIGTERM_AT * full_calls:
        if victim.poll() is not None:
            raise SystemExit(
                f"{path} ended ({victim.returncode}) after {calls(server)} calls, before the signal"
            )
        time.sleep(0.02)
    at = calls(server)
    victim.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    victim.wait()
    exit_s = time.monotonic() - signalled
    after = calls(server) - at
    row = runs(warehouse)[-1]
    server.reset_stats()
    ok, _ = timed_run([CLI, "extract", "--full-refresh"], environment)
    assert ok, f"the rerun after SIGTERM to {path} failed"
    return Stopped(path, at, after, exit_s, row, calls(server))


def sigterm_table(console: Console, server: EmulatorProcess, folder: Path, full_calls: int) -> None:
    """SIGTERM at a fifth of a full refresh, under the CLI and under `dagster job execute`."""
    tags = json.dumps({"dagster/partition": DEMO_TENANT_ID})
    dagster = [str(BIN / "dagster"), "job", "execute", "-m", "pipelines.definitions", "-j", "full_refresh"]
    paths = {
        "authority-sync extract": [CLI, "extract", "--full-refresh"],
        "dagster job execute": [*dagster, "--tags", tags],
    }
    table = Table(
        "SIGTERM to", "at call", "calls after", "exit s", "goal s", "row", "rerun calls", "full run"
    )
    for path, command in paths.items():
        stopped = sigterm_at(path, command, full_calls, server, folder)
        table.add_row(
            path,
            f"{stopped.signalled_at:,}",
            f"{stopped.calls_after:,}",
            f"{stopped.exit_s:.1f}",
            f"{STOPPED_WITHIN_S:g}",
            stopped.row,
            f"{stopped.rerun_calls:,}",
            f"{full_calls:,}",
        )
    console.print(table)


def main() -> None:
    console = Console()
    folder = OUTPUT / "kill_matrix"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    base = folder / "base.duckdb"
    with EmulatorProcess(SPEC, folder / "emulator.log") as server:
        ok, _ = timed_run([CLI, "extract", "--full-refresh"], env(server, base))
        assert ok, "the base run failed"
        server.reset_stats()
        ok, reference_s = timed_run(
            [CLI, "extract", "--full-refresh"], env(server, folder / "reference.duckdb")
        )
        full_calls = calls(server)
        console.print(f"{SPEC.describe()}: a full refresh takes {reference_s:.1f} s and {full_calls:,} calls")
        if "--sigterm" in sys.argv[1:]:
            sigterm_table(console, server, folder, full_calls)
            return
        table = Table(
            "killed at",
            "opens offline",
            "state",
            "row",
            "rerun",
            "rerun calls",
            "without resume",
            "rerun s",
        )
        for point in POINTS:
            resumed = kill_at(point, reference_s, server, base, folder)
            plain = kill_at(point, reference_s, server, base, folder, ADM_RESUME_HOURS="0")
            table.add_row(
                f"{point:.0%}",
                "yes" if resumed.opened else "NO",
                resumed.state,
                resumed.row,
                "ok" if resumed.rerun_ok else "FAILED",
                f"{resumed.rerun_calls:,}",
                f"{plain.rerun_calls:,}",
                f"{resumed.rerun_s:.1f}",
            )
        console.print(table)


if __name__ == "__main__":
    main()
