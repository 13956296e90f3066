"""What every benchmark scenario shares: an emulator in its own process, contenders run as subprocesses
with their process tree's memory sampled, the emulator's own count of the calls, and the printed table.

Nothing here runs in the contender's process: the emulator, the harness and each contender are separate
processes, so no contender shares an interpreter lock with the server it reads from.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import psutil
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN

BIN = Path(sys.executable).parent
CLI = str(BIN / "authority-sync")
OUTPUT = Path("data/bench")
READY_TIMEOUT_S = 300.0
SAMPLE_EVERY_S = 0.05
"""Memory of the contender's process tree is sampled this often."""
STATS_EVERY_S = 0.1
"""The emulator's counters are read this often during a run (to time the first and the last call)."""
RUN_TIMEOUT_S = 900.0
MB = 1024 * 1024


@dataclass(frozen=True)
class EmulatorSpec:
    """How a scenario's emulator is started: seed, scale and faults (the CLI's options)."""

    decisions: int
    delegations: int
    documents: int
    users: int
    latency_ms: float = 0.0
    rate_limit: float | None = None
    rate_burst: int | None = None
    seed: int = 42

    def arguments(self) -> list[str]:
        """``authority-sync emulator`` options."""
        options = [
            f"--seed={self.seed}",
            f"--decisions={self.decisions}",
            f"--delegations={self.delegations}",
            f"--documents={self.documents}",
            f"--users={self.users}",
            f"--latency-ms={self.latency_ms}",
        ]
        if self.rate_limit is not None:
            options.append(f"--rate-limit={self.rate_limit}")
        if self.rate_burst is not None:
            options.append(f"--rate-burst={self.rate_burst}")
        return options

    def describe(self) -> str:
        """One line for the printout."""
        limit = f", {self.rate_limit:g}/min burst {self.rate_burst}" if self.rate_limit else ""
        return (
            f"{self.decisions:,} decisions, {self.delegations:,} delegations, {self.documents:,} documents, "
            f"{self.users:,} users; {self.latency_ms:g} ms latency{limit}; seed {self.seed}"
        )


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EmulatorProcess:
    """``authority-sync emulator`` in a subprocess on a free port; ready once ``/_admin/stats`` answers."""

    def __init__(self, spec: EmulatorSpec, log: Path) -> None:
        self.spec = spec
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._http = httpx.Client(base_url=self.base_url, timeout=120)

    def __enter__(self) -> EmulatorProcess:
        self._log.parent.mkdir(parents=True, exist_ok=True)
        command = [CLI, "emulator", f"--port={self.port}", "--log-level=warning", *self.spec.arguments()]
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"the emulator exited with {self._process.returncode}; see {self._log}")
            try:
                self._http.get("/_admin/stats").raise_for_status()
                return self
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the emulator did not answer in time") from None
                time.sleep(0.1)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._http.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def stats(self) -> dict[str, Any]:
        """The emulator's counters (requests per endpoint, statuses, faults, writes)."""
        answer: dict[str, Any] = self._http.get("/_admin/stats").json()
        return answer

    def reset(self) -> None:
        """Back to the seeded records, zero counters, a full rate budget: every contender sees the same."""
        self._http.post("/_admin/reset").raise_for_status()

    def refill(self, **changes: object) -> None:
        """Refill the rate budget: the faults are put back (with ``changes``), which restarts the bucket."""
        faults = self._http.get("/_admin/faults")
        faults.raise_for_status()
        self._http.put("/_admin/faults", json=faults.json() | changes).raise_for_status()

    def set_burst(self, burst: int) -> None:
        """A new bucket size for the rate limit (and a full bucket of it)."""
        faults = self._http.get("/_admin/faults").json()
        self.refill(**{"rateBurst" if "rateBurst" in faults else "rate_burst": burst})

    def reset_stats(self) -> None:
        """Zero the counters, keep the records."""
        self._http.post("/_admin/stats/reset").raise_for_status()

    def mutate(self, changes: dict[str, int]) -> dict[str, list[str]]:
        """Change records behind the contenders' back (``/_admin/mutate``)."""
        response = self._http.post("/_admin/mutate", json=changes)
        response.raise_for_status()
        touched: dict[str, list[str]] = response.json()
        return touched


@dataclass
class Observed:
    """What the harness saw of one subprocess run."""

    returncode: int
    wall_s: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    first_call_s: float | None = None
    """Seconds from the start to the first call the emulator counted (to the sample's precision)."""
    last_call_s: float | None = None
    """Seconds from the start to the last call the emulator counted."""

    @property
    def api_window_s(self) -> float | None:
        """Seconds between the first and the last call the emulator counted."""
        if self.first_call_s is None or self.last_call_s is None:
            return None
        return self.last_call_s - self.first_call_s


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def run_observed(
    command: Sequence[str], env: dict[str, str], emulator: EmulatorProcess | None = None
) -> Observed:
    """Run ``command``; sample its process tree's memory and, if given, the emulator's call count."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    watched = psutil.Process(process.pid)
    peak = 0
    stop = threading.Event()
    calls: dict[str, float | None] = {"first": None, "last": None}

    def sample_memory() -> None:
        nonlocal peak
        while not stop.is_set():
            try:
                peak = max(peak, tree_rss(watched))
            except psutil.NoSuchProcess:
                return
            stop.wait(SAMPLE_EVERY_S)

    def sample_calls() -> None:
        assert emulator is not None
        seen = 0
        while not stop.wait(STATS_EVERY_S):
            count = sum(emulator.stats()["requests"].values())
            if count != seen:
                moment = time.perf_counter() - started
                calls["first"] = calls["first"] if calls["first"] is not None else moment
                calls["last"] = moment
                seen = count

    threads = [threading.Thread(target=sample_memory, daemon=True)]
    if emulator is not None:
        threads.append(threading.Thread(target=sample_calls, daemon=True))
    for thread in threads:
        thread.start()
    try:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    stop.set()
    for thread in threads:
        thread.join()
    return Observed(process.returncode, wall, peak / MB, stdout, stderr, calls["first"], calls["last"])


def base_env() -> dict[str, str]:
    """The harness's environment without any ``ADM_*`` or dlt setting that could leak into a contender, nor
    ``DAGSTER_HOME`` (with it our CLI runs the sync as a Dagster job: a contender asks for it,
    `OursConfig.dagster_home`)."""
    return {
        key: value
        for key, value in os.environ.items()
        if key != "DAGSTER_HOME"
        and not key.startswith(("ADM_", "EXTRACT__", "NORMALIZE__", "LOAD__", "RUNTIME__"))
    }


@dataclass
class Row:
    """One table row: one contender's run in one scenario."""

    contender: str
    ok: bool
    wall_s: float
    api_calls: int
    rate_limited: int
    rows: int
    peak_rss_mb: float
    bound_s: float | None
    calls_by_endpoint: dict[str, int] = field(default_factory=dict)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        """Rows loaded per second of wall time."""
        return self.rows / self.wall_s if self.wall_s else 0.0

    @property
    def ratio(self) -> float | None:
        """Wall time over the bound."""
        return self.wall_s / self.bound_s if self.bound_s else None

    def as_json(self) -> dict[str, Any]:
        """JSON-ready form, with the derived figures."""
        return asdict(self) | {"rows_per_s": round(self.rows_per_s, 1), "ratio_to_bound": self.ratio}


@dataclass(frozen=True)
class Target:
    """A target of the issue, computed from the figures."""

    text: str
    holds: bool | None
    """None when it could not be judged (a run failed, or the scenario is not available)."""
    figure: str


def latency_bound(calls: int, concurrency: int, latency_s: float) -> float:
    """``ceil(calls / concurrency) * latency``: the least time so many calls take at that concurrency."""
    return math.ceil(calls / concurrency) * latency_s


def rate_bound(calls: int, rate_per_minute: float, burst: float) -> float:
    """The least time so many calls take under a token bucket that starts full: the calls beyond the
    burst arrive at the plan rate."""
    return max(0.0, calls - burst) / (rate_per_minute / 60)


COLUMNS = (
    "contender",
    "wall s",
    "API calls",
    "429s",
    "rows loaded",
    "rows/s",
    "peak MB",
    "calls s",
    "bound s",
    "x bound",
)
LEGEND = (
    "API calls and 429s as the emulator counted them; peak MB: the contender's process tree; calls s: first "
    "to last call the emulator saw; x bound = wall s / bound s"
)


def cells(row: Row) -> list[str]:
    """A row's figures in the order of `COLUMNS` (the contender's name first)."""
    window = row.extra.get("api_window_s")
    return [
        row.contender + ("" if row.ok else " (failed)"),
        f"{row.wall_s:.1f}",
        f"{row.api_calls:,}",
        f"{row.rate_limited:,}",
        f"{row.rows:,}",
        f"{row.rows_per_s:,.0f}",
        f"{row.peak_rss_mb:.0f}",
        "" if window is None else f"{window:.1f}",
        "" if row.bound_s is None else f"{row.bound_s:.1f}",
        "" if row.ratio is None else f"{row.ratio:.2f}",
    ]


def print_scenario(
    console: Console, title: str, setup: list[str], rows: list[Row], targets: list[Target]
) -> None:
    """The scenario's table, one row per contender, then its targets and whether each holds."""
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(COLUMNS):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*cells(row), style=None if row.ok else "red")
    for line in setup:
        console.print(line, markup=False)
    console.print(LEGEND, style="dim")
    console.print(table)
    for row in rows:
        if row.note:
            console.print(f"  {row.contender}: {row.note}", markup=False)
    mark = {True: "[green]holds[/]", False: "[red]MISSED[/]", None: "[yellow]not judged[/]"}
    for target in targets:
        console.print(f"  target: {escape(target.text)} -> {escape(target.figure)}: {mark[target.holds]}")


MARK = {True: "holds", False: "**missed**", None: "not judged"}


def markdown_scenario(title: str, setup: list[str], rows: list[Row], targets: list[Target]) -> str:
    """The scenario as the README shows it: setup, one table row per contender, the targets."""
    lines = [f"#### {title}", "", *(f"- {line}" for line in setup), f"- {LEGEND}", ""]
    lines += ["| " + " | ".join(COLUMNS) + " |", "|---" + "|--:" * (len(COLUMNS) - 1) + "|"]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in rows]
    lines.append("")
    lines += [f"- {row.contender}: {row.note}" for row in rows if row.note]
    lines += [f"- target: {target.text}: {target.figure}, {MARK[target.holds]}" for target in targets]
    return "\n".join(lines) + "\n"


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """Write one scenario's figures to ``data/bench/<name>.json``."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def last_line_json(stdout: str, prefix: str) -> dict[str, Any] | None:
    """The JSON of the last line of ``stdout`` that starts with ``prefix``."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(prefix):
            found: dict[str, Any] = json.loads(line.removeprefix(prefix))
            return found
    return None


def tail(text: str, lines: int = 8) -> str:
    """The last lines of a contender's output, for a failure note."""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())


DEMO = {"tenant_id": DEMO_TENANT_ID, "token": DEMO_TOKEN}
"""The emulator's demo tenant (public, emulator-only credentials)."""

Check = Callable[[list[Row]], list[Target]]
