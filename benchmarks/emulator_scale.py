"""The emulator at scale: how long seeding takes, and how long the server spends on each page of E8.

Run ``python -m benchmarks.emulator_scale [--decisions 100000] [--pages 200]``.

Seeding is timed as the wall time of ``Emulator(EmulatorOptions(scale=...))``. The time per page is the
time spent inside the ASGI app (fault middleware included) for one ``GET /decision/v1/decisions`` of 100
records, the app being called in-process through ``httpx.ASGITransport``: no socket, no client parsing.
Each query is paged twice: a cold pass (nothing selected or serialised yet; the first page selects and
sorts every decision) and a warm repeat. The queries are the plain list (default order) and a filtered
one (``updatedAtStart`` and ``sortBy=updatedAt``, as an incremental sync asks).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass
from datetime import timedelta

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.app import create_app
from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN, SEED_EPOCH, Scale
from emulator.service import Emulator, EmulatorOptions
from models.base import format_timestamp

PAGE_SIZE = 100
SEED_TARGET = "seconds"
PAGE_TARGET = "a few ms"


class Timed:
    """An ASGI app that records the time each request spends inside the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.samples: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        await self.app(scope, receive, send)
        self.samples.append(time.perf_counter() - start)


@dataclass(frozen=True)
class Figures:
    """Server-side milliseconds per page of one pass."""

    first: float
    median: float
    p95: float
    worst: float

    @classmethod
    def of(cls, seconds: list[float]) -> Figures:
        """Figures of a pass's samples, in milliseconds."""
        ms = [value * 1000 for value in seconds]
        return cls(ms[0], statistics.median(ms), statistics.quantiles(ms, n=20)[-1], max(ms))


async def page_through(timed: Timed, params: dict[str, str], pages: int) -> list[float]:
    """Request ``pages`` pages of E8 with ``params``; the server-side seconds of each."""
    timed.samples.clear()
    headers = {"Authorization": f"Bearer {DEMO_TOKEN}"}
    transport = httpx.ASGITransport(app=timed)
    async with httpx.AsyncClient(transport=transport, base_url="http://emulator", headers=headers) as client:
        for number in range(1, pages + 1):
            query = {**params, "page": str(number), "limit": str(PAGE_SIZE)}
            response = await client.get("/decision/v1/decisions", params=query)
            response.raise_for_status()
            if not response.json()["data"]["data"]:
                raise SystemExit(f"page {number} of {params} is empty: ask for fewer pages")
    return list(timed.samples)


def main() -> None:
    """Seed, page cold and warm through the plain and the filtered query, print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=100_000, help="decisions of the demo tenant")
    parser.add_argument("--pages", type=int, default=200, help="pages of 100 per pass")
    arguments = parser.parse_args()
    options = EmulatorOptions(scale=Scale(decisions=arguments.decisions))

    start = time.perf_counter()
    Emulator(options)
    seed_seconds = time.perf_counter() - start

    app = create_app(options)
    timed = Timed(app)
    state = app.emulator.tenants[DEMO_TENANT_ID]
    since = format_timestamp(SEED_EPOCH - timedelta(days=15))
    queries = {"plain": {}, "filtered": {"updatedAtStart": since, "sortBy": "updatedAt"}}
    results: dict[str, tuple[Figures, Figures]] = {}
    for name, params in queries.items():
        app.emulator.changed(state, "decisions")  # start cold: no cached selection, no serialised record
        cold = asyncio.run(page_through(timed, params, arguments.pages))
        warm = asyncio.run(page_through(timed, params, arguments.pages))
        results[name] = (Figures.of(cold), Figures.of(warm))

    print(f"Emulator at {arguments.decisions:,} decisions; {arguments.pages} pages of {PAGE_SIZE} per pass")
    print(f"filtered: updatedAtStart={since}&sortBy=updatedAt\n")
    print(f"{'measure':<34}{'figure':>34}   target")
    print(f"{'seed (Emulator construction)':<34}{seed_seconds:>32.2f} s   {SEED_TARGET}")
    print(f"{'server ms per page':<34}{'first / median / p95 / max':>34}")
    for name, passes in results.items():
        for label, figures in zip(("cold", "warm"), passes, strict=True):
            row = f"{figures.first:.1f} / {figures.median:.2f} / {figures.p95:.2f} / {figures.worst:.1f}"
            print(f"{f'  {name}, {label}':<34}{row:>34}   {PAGE_TARGET} per page")


if __name__ == "__main__":
    main()
