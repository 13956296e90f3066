"""Paging: page counts, de-duplication, drift, bounded concurrency, and the paging strategy itself."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from emulator.service import Emulator
from models.base import Page
from models.queries import DecisionQuery, DecisionSortBy, DelegationQuery, GroupQuery, SortOrder, UserQuery
from resources.client import AdmClient
from resources.concurrency import Feed, bounded_map
from resources.errors import NotFoundError, PagingDriftError
from resources.paging import PageStream
from tests.conftest import DEMO_TENANT_ID, set_faults, shared_http
from tests.test_client_support import make_client

A = TypeVar("A")
R = TypeVar("R")


def stats(server: EmulatorServer) -> dict[str, Any]:
    response = shared_http().get(f"{server.base_url}/_admin/stats")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def ids_of(records: Iterable[Any]) -> list[str]:
    return [record.id for record in records]


# -- page counts against the emulator ---------------------------------------------------------------------


def test_an_empty_list_costs_one_call(client: AdmClient) -> None:
    stream = client.iter_pages("decisions", DecisionQuery(search="no decision is called this"))
    assert list(stream) == []
    assert (stream.total, stream.passes, client.metrics.calls) == (0, 1, {"E8": 1})


def test_one_page(client: AdmClient, emulator: Emulator) -> None:
    groups = ids_of(client.iter_groups())
    assert sorted(groups) == sorted(emulator.tenants[DEMO_TENANT_ID].groups)
    assert client.metrics.calls == {"groups": 1}


def test_an_exact_multiple_of_the_page_size(client: AdmClient, emulator: Emulator) -> None:
    stream = client.iter_pages("decisions")
    pages = list(stream)
    assert [len(page.data) for page in pages] == [100] * 10
    assert sorted(ids_of(item for page in pages for item in page.data)) == sorted(
        emulator.tenants[DEMO_TENANT_ID].decisions
    )
    assert (stream.total, stream.last_total, stream.records) == (1000, 1000, 1000)
    # The tenth page is full: the eleventh, empty, proves the end.
    assert client.metrics.calls == {"E8": 11}


def test_a_partial_last_page(client: AdmClient, emulator: Emulator) -> None:
    pages = list(client.iter_pages("users", UserQuery(limit=70)))
    assert sorted(len(page.data) for page in pages) == [20, 70, 70, 70, 70]
    assert len({user.id for page in pages for user in page.data}) == len(
        emulator.tenants[DEMO_TENANT_ID].users
    )


def test_requests_in_flight_never_exceed_the_concurrency(server: EmulatorServer) -> None:
    set_faults(server, FaultConfig(latency_ms=30))
    with make_client(server, concurrency=3) as client:
        assert len(list(client.iter_decisions())) == 1000
        delegation_ids = ids_of(client.iter_delegations())
        revisions = dict(client.map_concurrent(client.delegation_revision_ids, delegation_ids[:30]))
    state = server.emulator.tenants[DEMO_TENANT_ID]
    assert revisions == {key: sorted(state.delegation_revisions[key], key=int) for key in delegation_ids[:30]}
    assert stats(server)["peakInFlight"] == 3


def test_map_concurrent_raises_the_first_error(client: AdmClient, emulator: Emulator) -> None:
    known = list(emulator.tenants[DEMO_TENANT_ID].delegations)[:3]
    with pytest.raises(NotFoundError):
        list(client.map_concurrent(client.delegation_revision_ids, [*known, "no-such-delegation"]))


# -- drift injected by the emulator -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "query"),
    [("decisions", DecisionQuery(limit=100)), ("delegations", DelegationQuery(limit=50))],
)
def test_drift_returns_every_record_present_for_the_whole_run_once(
    server: EmulatorServer, kind: str, query: DecisionQuery | DelegationQuery
) -> None:
    records = getattr(server.emulator.tenants[DEMO_TENANT_ID], kind)
    at_start = set(records)
    set_faults(server, FaultConfig(drift_every=3, latency_ms=5))
    with make_client(server) as client:
        stream = client.iter_pages(kind, query)
        returned = ids_of(item for page in stream for item in page.data)
    at_end = set(records)
    assert len(stream.totals_seen) > 1, "the emulator drifted while the client paged"
    assert len(returned) == len(set(returned))
    # Inserts land at the end and updates move nothing: the list as it is at the end, read whole.
    assert at_start < at_end == set(returned)
    assert (stream.passes, stream.last_total) == (1, len(at_end))


def test_drift_under_an_order_updates_can_change_raises(server: EmulatorServer) -> None:
    set_faults(server, FaultConfig(drift_every=2))
    query = DecisionQuery(sort_by=DecisionSortBy.NAME, sort_order=SortOrder.ASC)
    with make_client(server) as client, pytest.raises(PagingDriftError, match=r"E8: the list changed"):
        list(client.iter_decisions(query))


def test_a_service_ignoring_the_sort_is_caught(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    set_faults(server, FaultConfig(ignore_params=["sortBy", "sortOrder"]))
    with make_client(server) as client:
        assert len(set(ids_of(client.iter_decisions()))) == 1000
        set_faults(server, FaultConfig(ignore_params=["sortBy", "sortOrder"], drift_every=3))
        with pytest.raises(PagingDriftError):
            list(client.iter_decisions())
    assert "ignored the requested order" in caplog.text


def test_a_filter_on_a_field_that_can_change_is_kept_and_judged_strictly(client: AdmClient) -> None:
    stream = client.iter_pages("groups", GroupQuery(tenant_id=DEMO_TENANT_ID, status=["ACTIVE"], limit=5))
    groups = list(stream.items())
    assert len({group.id for group in groups}) == len(groups) == 40
    assert not stream.append_only
    assert client.metrics.calls == {"groups": 9}  # 8 full pages, then the empty one that proves the end


# -- the strategy, on a list whose changes the test scripts ----------------------------------------------


class ScriptedList:
    """An in-memory paged list sorted by creation; ``changes[n]`` runs just before the n-th fetch."""

    def __init__(self, size: int, changes: dict[int, Callable[[ScriptedList], None]]) -> None:
        self.clock = datetime(2025, 1, 1, tzinfo=UTC)
        self.records: list[Record] = []
        self.changes = changes
        self.fetches = 0
        for _ in range(size):
            self.insert()

    def insert(self) -> None:
        self.clock += timedelta(seconds=1)
        self.records.append(Record(id=f"r{len(self.records) + 1:04d}", created=self.clock))

    def remove(self, index: int) -> None:
        del self.records[index]

    def fetch(self, limit: int) -> Callable[[int, int], Page[Record]]:
        def page(number: int, size: int) -> Page[Record]:
            assert size == limit
            self.fetches += 1
            change = self.changes.get(self.fetches)
            if change is not None:
                change(self)
            data = self.records[(number - 1) * limit : number * limit]
            return Page[Record](page=number, limit=limit, total=len(self.records), data=data)

        return page


class Record(BaseModel):
    id: str
    created: datetime


def in_order(func: Callable[[A], R], items: Iterable[A]) -> Iterator[tuple[A, R]]:
    return ((item, func(item)) for item in items)


def stream_of(scripted: ScriptedList, append_only: bool, limit: int = 10) -> PageStream[Record]:
    return PageStream(
        scripted.fetch(limit),
        limit=limit,
        record_id=lambda record: record.id,
        mapper=in_order,
        order_key=(lambda record: (record.created, record.id)) if append_only else None,
        describe=PagingDriftError,
    )


def test_appends_while_paging_are_read_to_the_new_end_in_one_pass() -> None:
    # 40 records are 4 pages; two inserts while they are read make 42: a fifth page, and page 4 again.
    scripted = ScriptedList(40, {2: ScriptedList.insert, 3: ScriptedList.insert})
    stream = stream_of(scripted, append_only=True)
    returned = ids_of(stream.items())
    assert returned == [f"r{n:04d}" for n in range(1, 43)]
    assert (stream.passes, stream.total, stream.last_total) == (1, 40, 42)
    assert scripted.fetches == 6


def test_a_list_growing_while_its_new_end_is_read_is_followed_to_its_end() -> None:
    # Every fetch inserts: page 4 (fetch 4) ends at 43, the new end (pages 4 and 5) at 45, and page 5's
    # answer, holding all 45, ends the read.
    scripted = ScriptedList(40, dict.fromkeys(range(2, 99), ScriptedList.insert))
    stream = stream_of(scripted, append_only=True)
    assert ids_of(stream.items()) == [record.id for record in scripted.records]
    assert (stream.last_total, scripted.fetches) == (45, 6)


def test_a_removal_while_paging_triggers_a_pass_that_fills_the_gap() -> None:
    # Removing r0005 after page 1 shifts r0011 onto page 1, which was already read: pass 1 misses it.
    scripted = ScriptedList(35, {2: lambda s: s.remove(4)})
    stream = stream_of(scripted, append_only=True)
    returned = ids_of(stream.items())
    survivors = [record.id for record in scripted.records]
    assert sorted(returned) == sorted({*survivors, "r0005"})
    assert len(returned) == len(set(returned))
    assert stream.passes == 2


def test_a_list_that_never_settles_raises_after_the_last_pass() -> None:
    scripted = ScriptedList(35, dict.fromkeys(range(2, 100, 4), ScriptedList.insert))
    stream = stream_of(scripted, append_only=False)
    with pytest.raises(PagingDriftError, match="3 passes"):
        list(stream)
    assert stream.passes == 3


@settings(max_examples=300, deadline=None)
@given(
    usable=st.integers(1, 4),  # small lists: two passes of a reshuffled one often read alike
    rejected=st.lists(st.sampled_from(['{"id": ""}', '{"id": null}', '{"name": "x"}', "{}"]), max_size=4),
    limit=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    ordered=st.booleans(),
    totals=st.booleans(),
)
def test_a_list_reshuffled_for_every_request_never_completes_short_of_a_record(
    usable: int, rejected: list[str], limit: int, seed: int, ordered: bool, totals: bool
) -> None:
    """A service that ignores the order asked for and serves its list in a new order at each request
    (as RFC 9110 lets a GET answer differ from one request to the next): a pass may read a record on two
    pages, its repeat filling the place of a record it missed. The stream yields every usable record, or
    fails naming the drift; never a list short of one. Whether the creation order was asked for (a page
    of one record always looks in order) and whether pages give a total are drawn. Rejected records alike
    to the byte are one record, as the service serves them."""
    records: list[Record | str] = [
        Record(id=f"r{n}", created=datetime(2025, 1, 1, tzinfo=UTC)) for n in range(usable)
    ]
    records += rejected
    shuffler = random.Random(seed)

    def fetch(number: int, size: int) -> Page[Record]:
        order = shuffler.sample(records, len(records))
        served = order[(number - 1) * size : number * size]
        data = [record for record in served if isinstance(record, Record)]
        page = Page[Record](page=number, limit=size, total=len(records) if totals else None, data=data)
        return page.keeping_out([record for record in served if isinstance(record, str)])

    stream = PageStream(
        fetch,
        limit=limit,
        record_id=lambda record: record.id,
        mapper=in_order,
        order_key=(lambda record: (record.created, record.id)) if ordered else None,
        describe=PagingDriftError,
    )
    try:
        read = set(ids_of(stream.items()))
    except PagingDriftError:
        return
    assert read == {f"r{n}" for n in range(usable)}


CHANGE = st.tuples(st.integers(1, 12), st.booleans(), st.integers(-3, 15))
"""A change of a sorted list: (the fetch it comes before, an insert or a removal, where: for an insert its
creation time in seconds from the first record's, for a removal an index into the records)."""


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 10),
    changes=st.lists(CHANGE, max_size=4),
    limit=st.integers(1, 4),
    capped=st.booleans(),
    totals=st.booleans(),
)
def test_a_list_served_in_creation_order_loses_no_record_present_throughout_its_read(
    size: int, changes: list[tuple[int, bool, int]], limit: int, capped: bool, totals: bool
) -> None:
    """A service that honours the creation order asked for while records are inserted and removed between
    requests; an insert may carry a creation time earlier than records already listed (a record imported
    with its own date: nothing in the spec forbids it). Pages of ``limit`` records, the cap reported or not,
    with or without a total. The stream yields every record present from the first request to the last,
    and only records the service held, each once; or it fails naming the drift. Removals are drawn only
    for pages without a total: a removal offset by an insert between two fetches leaves every total as it
    was, the one change the paging is documented not to see in one pass (the service soft-deletes)."""
    if totals:
        changes = [change for change in changes if change[1]]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    records = [Record(id=f"r{n}", created=start + timedelta(seconds=n)) for n in range(size)]
    due: dict[int, list[tuple[bool, int]]] = {}
    for at, insert, where in changes:
        due.setdefault(at, []).append((insert, where))
    ever, fetches = {record.id for record in records}, 0

    def fetch(number: int, asked: int) -> Page[Record]:
        nonlocal fetches
        fetches += 1
        for insert, where in due.get(fetches, []):
            if insert:
                new = Record(id=f"n{len(ever)}", created=start + timedelta(seconds=where, milliseconds=1))
                records.append(new)
                ever.add(new.id)
            elif records:
                del records[where % len(records)]
        records.sort(key=lambda record: (record.created, record.id))
        data = records[(number - 1) * limit : number * limit]
        return Page[Record](
            page=number, limit=limit if capped else asked, total=len(records) if totals else None, data=data
        )

    present = {record.id for record in records}  # removed below as the changes remove them
    stream = PageStream(
        fetch,
        limit=10,
        record_id=lambda record: record.id,
        mapper=in_order,
        order_key=lambda record: (record.created, record.id),
        describe=PagingDriftError,
    )
    try:
        read = ids_of(stream.items())
    except PagingDriftError:
        return
    throughout = present & {record.id for record in records}
    assert len(read) == len(set(read))
    assert throughout <= set(read) <= ever


def test_a_stream_is_read_once() -> None:
    stream = stream_of(ScriptedList(3, {}), append_only=True)
    assert len(list(stream.items())) == 3
    with pytest.raises(RuntimeError, match="only once"):
        list(stream)


# -- the sliding window -----------------------------------------------------------------------------------


def test_the_window_never_takes_more_work_than_it_can_run() -> None:
    pulled, running, peak = 0, 0, 0
    lock = threading.Lock()

    def items() -> Iterator[int]:
        nonlocal pulled
        for item in range(100):
            pulled += 1
            yield item

    def work(item: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        with lock:
            running -= 1
        return item * 2

    with ThreadPoolExecutor(8) as executor:
        results = bounded_map(executor, work, items(), window=4)
        first = next(results)
        # At most the window in flight plus the window pulled ahead of it (and the one being pulled).
        assert pulled <= 2 * 4 + 1
        rest = list(results)
    assert sorted([first, *rest]) == [(n, 2 * n) for n in range(100)]
    assert peak <= 4


def test_closing_the_window_early_cancels_the_rest() -> None:
    done: list[int] = []
    with ThreadPoolExecutor(2) as executor:
        results = bounded_map(executor, done.append, range(1000), window=2)
        next(results)
        results.close()
    assert len(done) <= 4
    # The thread that pulls items ends with the map instead of waiting forever for room.
    for thread in threading.enumerate():
        if thread.name == "adm-feeder":
            thread.join(timeout=5)
            assert not thread.is_alive()


def test_a_source_that_is_still_being_filled_is_mapped_as_it_grows() -> None:
    feed = Feed[int]()
    with ThreadPoolExecutor(4) as executor:
        results = bounded_map(executor, lambda n: n * 10, feed, window=4)
        feed.put(1)
        assert next(results) == (1, 10)  # served before the feed is complete
        feed.put(2)
        feed.close()
        assert list(results) == [(2, 20)]


def test_a_failed_source_fails_the_map() -> None:
    feed = Feed[int]()
    feed.put(1)
    feed.close(RuntimeError("the list read failed"))
    with ThreadPoolExecutor(2) as executor, pytest.raises(RuntimeError, match="list read failed"):
        list(bounded_map(executor, lambda n: n, feed, window=2))
