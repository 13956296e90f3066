"""The two contenders, each run as its own process against a scenario's emulator.

- ``authority-sync``: the product's nightly extract, ``authority-sync extract`` configured through the
  ``ADM_*`` variables, as an operator runs it.
- ``dlt rest_api``: ``python -m benchmarks.dlt_pipeline`` (see that module for its configuration).

API calls and 429s are the emulator's own counts (server side), zeroed before each run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.harness import (
    CLI,
    DEMO,
    EmulatorProcess,
    Observed,
    Row,
    base_env,
    last_line_json,
    run_observed,
    tail,
)

OURS = "authority-sync"
DLT = "dlt rest_api"


@dataclass(frozen=True)
class OursConfig:
    """The ``ADM_*`` settings of one run of ours."""

    concurrency: int
    rate_per_minute: float
    burst: int | None = None
    dagster_home: Path | None = None
    """``DAGSTER_HOME``: with it the CLI runs the sync as the Dagster job in that instance; without it (the
    benchmarks' default) the sync alone."""

    def env(self, emulator: EmulatorProcess, warehouse: Path) -> dict[str, str]:
        """The environment of a run of ours: the harness's (`base_env`) with these settings, the emulator's
        demo tenant and ``warehouse``."""
        env = base_env() | {
            "ADM_BASE_URL": emulator.base_url,
            "ADM_TOKEN": DEMO["token"],
            "ADM_TENANT_ID": DEMO["tenant_id"],
            "ADM_WAREHOUSE": str(warehouse),
            "ADM_CONCURRENCY": str(self.concurrency),
            "ADM_RATE_PER_MINUTE": f"{self.rate_per_minute:g}",
        }
        if self.burst is not None:
            env["ADM_BURST"] = str(self.burst)
        if self.dagster_home is not None:
            env["DAGSTER_HOME"] = str(self.dagster_home)
        return env


def run_ours(
    emulator: EmulatorProcess,
    warehouse: Path,
    config: OursConfig,
    *,
    full_refresh: bool,
    label: str = OURS,
    command: list[str] | None = None,
) -> Row:
    """One ``authority-sync extract`` into ``warehouse``; rows are those the run committed. Another
    ``authority-sync`` ``command`` runs the same way (the caller then says what its rows are)."""
    env = config.env(emulator, warehouse)
    extract = command is None
    arguments = ["extract", *(["--full-refresh"] if full_refresh else [])] if command is None else command
    emulator.reset_stats()
    observed = run_observed([CLI, *arguments], env, emulator)
    if observed.returncode != 0:
        return _row(label, emulator, observed, 0, f"exit {observed.returncode}: {tail(observed.stdout)}", {})
    if not extract:
        return _row(label, emulator, observed, 0, "", {})
    run = committed_run(warehouse)
    phases = breakdown(observed.wall_s, run.phase_seconds)
    note = "time: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items())
    extra: dict[str, Any] = {"mode": run.mode, "phases_s": phases, "warnings": run.warnings}
    return _row(label, emulator, observed, run.rows, note, extra)


@dataclass(frozen=True)
class CommittedRun:
    """What the warehouse's latest run says about itself."""

    rows: int
    """Rows it delivered: inserted, updated or unchanged."""
    mode: str
    phase_seconds: dict[str, float]
    warnings: list[str]
    records_reused: dict[str, int]
    """Per list, records read unchanged whose stored rows it staged (`warehouse.unchanged`)."""


def committed_run(warehouse: Path) -> CommittedRun:
    """The latest run of ``warehouse`` as its ``sync_runs`` row records it."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        found = con.execute(
            "SELECT row_counts, mode, phase_seconds, warnings, records_reused FROM sync_runs "
            "ORDER BY finished_at DESC LIMIT 1"
        ).fetchone()
    finally:
        con.close()
    if found is None:
        return CommittedRun(0, "", {}, [], {})
    counts: dict[str, dict[str, int]] = json.loads(found[0])
    total = sum(c["inserted"] + c["updated"] + c["unchanged"] for c in counts.values())
    return CommittedRun(
        total,
        str(found[1]),
        json.loads(found[2] or "{}"),
        json.loads(found[3] or "[]"),
        json.loads(found[4] or "{}"),
    )


RUN_IMPORTS = "import pipelines.cli, pipelines.console, pipelines.tenant_runs"
"""What an extract imports before its first request: the command line, its summary and the sync (the
commands import their implementation when they run, so ``--help`` no longer measures this)."""


@cache
def startup_s() -> float:
    """Seconds the interpreter and `RUN_IMPORTS` take: what every run pays first."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN_IMPORTS], capture_output=True, check=True, env=base_env())
    return time.perf_counter() - started


def breakdown(wall_s: float, phase_seconds: dict[str, float]) -> dict[str, float]:
    """Where a run's wall time went: process start (imports), the sync's phases as its row records them,
    and the rest (Dagster's run set-up and event log, settings, the tenant lock, the CLI's summary)."""
    start = startup_s()
    phases = {name: phase_seconds.get(name, 0.0) for name in ("extract", "checks", "commit", "publish")}
    return {"process start": start, **phases, "Dagster and the rest": wall_s - start - sum(phases.values())}


def run_dlt(
    emulator: EmulatorProcess,
    workdir: Path,
    workers: int,
    *,
    label: str = DLT,
    max_attempts: int | None = None,
) -> Row:
    """One run of the dlt pipeline whose state and DuckDB file live in ``workdir``; ``max_attempts``
    sets dlt's documented ``[runtime] request_max_attempts`` (default 5) of its HTTP retries."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.dlt_pipeline",
        f"--base-url={emulator.base_url}",
        f"--token={DEMO['token']}",
        f"--tenant-id={DEMO['tenant_id']}",
        f"--workdir={workdir}",
        f"--workers={workers}",
    ]
    env = base_env()
    if max_attempts is not None:
        env["RUNTIME__REQUEST_MAX_ATTEMPTS"] = str(max_attempts)
    emulator.reset_stats()
    observed = run_observed(command, env, emulator)
    result = last_line_json(observed.stdout, "BENCH_RESULT ")
    ok = observed.returncode == 0 and result is not None
    note = "" if ok else f"exit {observed.returncode}: {tail(observed.stderr or observed.stdout, 3)}"
    return _row(label, emulator, observed, int(result["rows"]) if result else 0, note, {}, ok=ok)


def fresh(path: Path) -> Path:
    """``path`` emptied (a file or folder of an earlier run removed)."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _row(
    label: str,
    emulator: EmulatorProcess,
    observed: Observed,
    rows: int,
    note: str,
    extra: dict[str, object],
    *,
    ok: bool | None = None,
) -> Row:
    stats = emulator.stats()
    requests: dict[str, int] = stats["requests"]
    return Row(
        contender=label,
        ok=observed.returncode == 0 if ok is None else ok,
        wall_s=observed.wall_s,
        api_calls=sum(requests.values()),
        rate_limited=int(stats["statuses"].get("429", 0)),
        rows=rows,
        peak_rss_mb=observed.peak_rss_mb,
        bound_s=None,
        calls_by_endpoint=dict(sorted(requests.items())),
        note=note,
        extra=extra
        | {
            "first_call_s": observed.first_call_s,
            "last_call_s": observed.last_call_s,
            "api_window_s": observed.api_window_s,
        },
    )
