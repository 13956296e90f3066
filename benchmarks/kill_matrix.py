"""The kill matrix: a full refresh killed (SIGKILL) at points through its run, then what the warehouse and
the next run make of it.

For each point: the warehouse must open (offline) holding exactly the state before the killed run; the
next run must succeed, mark the killed run ``killed`` with its calls, and spend only the list pages plus
the revision lists the killed run had not fetched (resume), against the whole tenant again without resume
(``ADM_RESUME_HOURS=0``, how every rerun behaved before issue 18).

    .venv/bin/python -m benchmarks.kill_matrix            # about 3 minutes
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from benchmarks.harness import CLI, OUTPUT, EmulatorProcess, EmulatorSpec, base_env
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
