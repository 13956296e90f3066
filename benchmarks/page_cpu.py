"""The extract's CPU per page of 100 records, one thread, no network in the timing (issue 31).

Run ``python -m benchmarks.page_cpu``. An emulator process serves 30 pages of decisions and 10 of users
once; then each phase of the hot path runs over those bodies, five times, and the fastest pass is printed
per page: validation under the record contract (`RecordContract.read_page`: the models and each record's
own text), flattening to rows (the list's flatten function) and staging (`StagingWriter` to Parquet).
Process CPU time, so other work on a shared machine inflates the figures less than a wall clock would.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from benchmarks.harness import OUTPUT, EmulatorProcess, EmulatorSpec
from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN
from resources.catalog import DECISIONS, USERS, PagedList
from resources.contract import RecordContract
from resources.endpoints import ENDPOINTS
from warehouse.catalog import LISTS
from warehouse.rows import TableRows
from warehouse.staging import StagingWriter

PAGES = {DECISIONS.name: 30, USERS.name: 10}
PAGE_SIZE = 100
PASSES = 5
SPEC = EmulatorSpec(decisions=3_000, delegations=100, documents=50, users=1_000)


def bodies(server: EmulatorProcess, source: PagedList[object], pages: int) -> list[bytes]:
    """The bodies of the first ``pages`` pages of ``source``, as the service sent them."""
    headers = {"Authorization": f"Bearer {DEMO_TOKEN}"}
    with httpx.Client(base_url=server.base_url, headers=headers) as client:
        path = ENDPOINTS[source.endpoint].path
        found = []
        for page in range(1, pages + 1):
            response = client.get(path, params={"page": page, "limit": PAGE_SIZE})
            response.raise_for_status()
            found.append(response.content)
        return found


def fastest(phase: Callable[[], object]) -> float:
    """The least process CPU seconds of `PASSES` runs of ``phase``."""
    spent = []
    for _ in range(PASSES):
        started = time.process_time()
        phase()
        spent.append(time.process_time() - started)
    return min(spent)


def stage(rows: list[TableRows]) -> None:
    """Stage ``rows`` into a folder that is removed afterwards."""
    with tempfile.TemporaryDirectory() as folder, StagingWriter(Path(folder)) as writer:
        for record_rows in rows:
            writer.add(record_rows)


def measure(source: PagedList[object], pages: list[bytes]) -> str:
    """One line: each phase's milliseconds per page of ``source``."""
    contract = RecordContract(tenant_id=DEMO_TENANT_ID)
    flatten = LISTS[source.name].flatten
    records = [
        record
        for number, body in enumerate(pages, start=1)
        for record in contract.read_page(source, number, body).data.data
    ]
    rows = [flatten(DEMO_TENANT_ID, record) for record in records]
    phases = {
        "validate": fastest(lambda: [contract.read_page(source, n, b) for n, b in enumerate(pages, start=1)]),
        "flatten": fastest(lambda: [flatten(DEMO_TENANT_ID, record) for record in records]),
        "stage": fastest(lambda: stage(rows)),
    }
    shown = ", ".join(f"{name} {seconds / len(pages) * 1000:.1f}" for name, seconds in phases.items())
    total = sum(phases.values()) / len(pages) * 1000
    return f"{source.name}: {len(records):,} records; ms per page: {shown}; total {total:.1f}"


def main() -> None:
    """Fetch the pages, then time each phase over them."""
    sources: list[PagedList[object]] = [DECISIONS, USERS]  # type: ignore[list-item]
    with EmulatorProcess(SPEC, OUTPUT / "work" / "page_cpu_emulator.log") as server:
        fetched = {source.name: bodies(server, source, PAGES[source.name]) for source in sources}
    for source in sources:
        print(measure(source, fetched[source.name]))


if __name__ == "__main__":
    main()
