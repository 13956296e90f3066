"""The client's paging against its bound: 10,000 decisions in pages of 100, 50 ms of latency per request.

Run ``python -m benchmarks.client_paging``. An emulator with 10,000 decisions and a fixed 50 ms latency
serves every page; the client reads the whole list with concurrency 1 and 16. The bound is the latency
alone: ``ceil(pages / concurrency) * 0.05`` s. The client cannot quite reach it, because page 1 must come
back (with ``total``) before pages 2..N can be asked for: one round trip more than the bound counts.

The emulator runs in its own process (``authority-sync emulator``), so its CPU work does not share the
client's interpreter lock: an emulator on a thread of the client's process used to bind the run at high
concurrency by that shared CPU work more than by the latency.

One untimed read first warms the emulator's caches (selection and serialised records), so that both timed
runs measure the client and the latency, not the emulator's first sort.

Then the small calls: every delegation's revision ids (E11), three times over, at concurrency 16, as a
full refresh asks for them. Their figure is the client's own CPU time per call (the emulator runs in
another process, and the latency is idle time), the Python each call costs in the client's layers.
Figures go to ``data/bench/client_paging.json``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.harness import EmulatorProcess, EmulatorSpec
from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN
from models.queries import DecisionQuery, DelegationQuery
from resources.client import AdmClient
from resources.settings import ClientSettings

DECISIONS = 10_000
PAGE_SIZE = 100
LATENCY_S = 0.05
CONCURRENCIES = (1, 16)
UNLIMITED_RATE = 10_000_000.0
"""Requests per minute: the emulator enforces no budget here, so the client's limiter must not either."""
REVISION_PASSES = 3
"""How many times the revision-id calls go over every delegation."""
OUTPUT = Path("data/bench/client_paging.json")
SPEC = EmulatorSpec(
    decisions=DECISIONS, delegations=400, documents=200, users=300, latency_ms=LATENCY_S * 1000
)


@dataclass(frozen=True)
class Run:
    """One timed read of the whole list."""

    concurrency: int
    pages: int
    records: int
    wall_s: float
    bound_s: float
    ratio: float
    api_calls: int
    peak_in_flight: int


def client_for(server: EmulatorProcess, concurrency: int) -> AdmClient:
    """A client of the emulator's demo tenant with no budget of its own."""
    settings = ClientSettings(
        base_url=server.base_url,
        token=DEMO_TOKEN,
        tenant_id=DEMO_TENANT_ID,
        rate_per_minute=UNLIMITED_RATE,
        concurrency=concurrency,
    )
    return AdmClient(settings)


def read_all(server: EmulatorProcess, concurrency: int) -> tuple[int, float]:
    """Read every decision with ``concurrency``; the records read and the wall seconds."""
    with client_for(server, concurrency) as client:
        started = time.perf_counter()
        records = sum(1 for _ in client.iter_decisions(DecisionQuery(limit=PAGE_SIZE)))
        return records, time.perf_counter() - started


def measure(server: EmulatorProcess, concurrency: int) -> Run:
    """A timed read, with the emulator's own count of the calls it served."""
    server.reset_stats()
    records, wall = read_all(server, concurrency)
    stats = server.stats()
    pages = math.ceil(records / PAGE_SIZE)
    bound = math.ceil(pages / concurrency) * LATENCY_S
    return Run(
        concurrency,
        pages,
        records,
        round(wall, 3),
        round(bound, 3),
        round(wall / bound, 2),
        sum(stats["requests"].values()),
        stats["peakInFlight"],
    )


@dataclass(frozen=True)
class SmallCalls:
    """The revision-id calls: how many, their wall time, and the client's CPU per call."""

    calls: int
    wall_s: float
    cpu_ms_per_call: float


def small_calls(server: EmulatorProcess, concurrency: int) -> SmallCalls:
    """Every delegation's revision ids, `REVISION_PASSES` times over, timed by the wall and by this
    process's CPU (every thread's)."""
    with client_for(server, concurrency) as client:
        ids = [delegation.id for delegation in client.iter_delegations(DelegationQuery(limit=PAGE_SIZE))]
        wanted = ids * REVISION_PASSES
        started, cpu = time.perf_counter(), time.process_time()
        calls = sum(1 for _ in client.map_concurrent(client.delegation_revision_ids, wanted))
        wall, spent = time.perf_counter() - started, time.process_time() - cpu
    return SmallCalls(calls, round(wall, 3), round(spent / calls * 1000, 3))


COLUMNS = (
    ("concurrency", "concurrency", "d"),
    ("pages", "pages", "d"),
    ("wall s", "wall_s", ".3f"),
    ("bound s", "bound_s", ".3f"),
    ("ratio", "ratio", ".2f"),
    ("API calls", "api_calls", "d"),
)
"""Title, field of `Run` and format of each printed column."""


def table(runs: list[Run]) -> str:
    """The runs as a fixed-width table."""
    head = " ".join(f"{title:>11}" for title, _, _ in COLUMNS)
    rows = [" ".join(f"{getattr(run, field):>11{form}}" for _, field, form in COLUMNS) for run in runs]
    return "\n".join([head, *rows])


def main() -> None:
    """Start the emulator, warm it, time each concurrency, print the table and write the JSON."""
    with EmulatorProcess(SPEC, OUTPUT.parent / "work" / "client_paging_emulator.log") as server:
        read_all(server, max(CONCURRENCIES))
        runs = [measure(server, concurrency) for concurrency in CONCURRENCIES]
        small = small_calls(server, max(CONCURRENCIES))
    print(table(runs))
    print(
        f"{small.calls:,} revision-id calls at concurrency {max(CONCURRENCIES)}: {small.wall_s:.2f} s, "
        f"client CPU {small.cpu_ms_per_call:.2f} ms per call"
    )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    figures = {
        "latency_s": LATENCY_S,
        "page_size": PAGE_SIZE,
        "runs": [asdict(run) for run in runs],
        "small_calls": asdict(small),
    }
    OUTPUT.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {OUTPUT}")


if __name__ == "__main__":
    main()
