"""Reading a whole paged list: the one paging strategy of the client.

Page 1 gives ``total``; pages 2..N are fetched concurrently through a sliding window (never all submitted
at once) and handed out as they complete, so no more than the window's pages are held at a time. Records
are de-duplicated by id across pages and passes.

Drift (records inserted, updated or removed while a list is paged). An offset-paged list only stays put
if nothing before a page's offset changes between the fetch of page 1 and the fetch of that page. Strategy:

1. The client sorts by the record's immutable creation key ascending, with the id as tie-break, wherever
   the list can (decisions and delegations ``createdAt``, users and groups ``createdOn``). In that order
   a new record lands at the end and an update moves nothing, so only a removal can shift records across
   page boundaries. Such a pass is *append-only*: a page whose ``total`` is *higher* than page 1's has only
   seen additions after every record that was present, and nothing that was present can be missed.
   An append-only pass reads **to the list's end as it is when the read finishes**: while any page reports
   more records than the last page knew of, the last page read (it may have been partial) and the pages
   added since are read again, so records inserted while a large list is paged are loaded too.
2. Every page reports ``total``. A pass is accepted when no page reports a total different from page 1's
   or, in an append-only pass, lower than page 1's (a removal). Otherwise another pass is made that yields
   only ids not yet seen. After ``MAX_PASSES`` passes with drift, `PagingDriftError` is raised rather than
   an incomplete list returned.
3. A pass counts as append-only only when the order is the creation key ascending, no filter on a field
   that can change is set (a status or updated-at filter lets records enter or leave mid-list), and every
   page really arrives in that order (a service that ignores the sort parameter would otherwise be trusted).

Why this one: it costs no extra call when nothing changes (the common case), and under the steady trickle
of inserts and updates of a live tenant it completes in one pass, where re-reading until two passes agree
would never finish. What totals cannot reveal is a removal exactly offset by an insert between two page
fetches; the service soft-deletes (``status`` DELETED, ``isDeleted``), so removals from a list are rare.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from models.base import Page
from resources.errors import PagingDriftError

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")

MAX_PASSES = 3
"""Passes over a drifting list before giving up with `PagingDriftError`."""
MAX_EXTENSIONS = 20
"""Rounds of reading a growing list's new last pages; a list still outgrowing them after these is left to
the completeness check, which then reports the first and the final total."""

logger = logging.getLogger(__name__)


class _Edge:
    """The highest page a pass has read and the total that page's answer reported."""

    def __init__(self, page: int, total: int) -> None:
        self.page, self.total = page, total

    def saw(self, page: int, total: int) -> None:
        """Note one answer; a later answer of the same page replaces the earlier one."""
        if page >= self.page:
            self.page, self.total = page, total


class Mapper(Protocol):
    """Runs ``func`` over ``items`` concurrently, yielding ``(item, result)`` as each completes."""

    def __call__(self, func: Callable[[A], R], items: Iterable[A]) -> Iterator[tuple[A, R]]: ...


class PageStream(Generic[T]):
    """The pages of one paged list, read once. Iterating yields pages holding only records not yielded
    before (a page left empty by de-duplication is skipped); `items` yields the records.

    After (or during) iteration: ``total`` is page 1's total of the first pass, ``last_total`` the total
    the list's end reported (the total of the last page received, for a pass that is not append-only),
    ``totals_seen`` every distinct total, ``passes`` the passes made and ``records`` the records yielded.
    """

    def __init__(
        self,
        fetch: Callable[[int], Page[T]],
        *,
        limit: int,
        record_id: Callable[[T], str],
        mapper: Mapper,
        order_key: Callable[[T], Any] | None,
        describe: Callable[[str], PagingDriftError],
        max_passes: int = MAX_PASSES,
    ) -> None:
        self._fetch = fetch
        self._limit = limit
        self._record_id = record_id
        self._map = mapper
        self._order_key = order_key
        self._describe = describe
        self._max_passes = max_passes
        self._seen: set[str] = set()
        self._started = False
        self.total: int | None = None
        self.last_total: int | None = None
        self.totals_seen: set[int] = set()
        self.passes = 0

    @property
    def records(self) -> int:
        """Records yielded so far."""
        return len(self._seen)

    @property
    def append_only(self) -> bool:
        """Whether passes are judged append-only (see the module docstring)."""
        return self._order_key is not None

    def __iter__(self) -> Iterator[Page[T]]:
        if self._started:
            raise RuntimeError("a PageStream can be iterated only once")
        self._started = True
        for number in range(1, self._max_passes + 1):
            self.passes = number
            totals: list[int] = []
            yield from self._pass(totals)
            if self._settled(totals):
                return
            logger.info(
                "the list changed during pass %d of at most %d (totals %s)",
                number,
                self._max_passes,
                sorted(set(totals)),
            )
        raise self._describe(
            f"the list changed during each of {self._max_passes} passes (totals seen: "
            f"{sorted(self.totals_seen)}); no consistent read"
        )

    def items(self) -> Iterator[T]:
        """Every record once, in the order pages complete."""
        for page in self:
            yield from page.data

    def _pass(self, totals: list[int]) -> Iterator[Page[T]]:
        first = self._fetch(1)
        if self.total is None:
            self.total = first.total
        yield from self._fresh(first, totals)
        end = _Edge(1, first.total)
        for number, page in self._map(self._fetch, range(2, self._pages(first.total) + 1)):
            yield from self._fresh(page, totals)
            end.saw(number, page.total)
        if self.append_only:
            yield from self._read_to_end(end, totals)
            self.last_total = end.total

    def _read_to_end(self, end: _Edge, totals: list[int]) -> Iterator[Page[T]]:
        """Read the pages a growing list gained while it was read, until its last page has seen every
        record any page reported."""
        for _ in range(MAX_EXTENSIONS):
            grown = max(totals)
            if end.total >= grown and end.page >= self._pages(grown):
                return
            logger.info(
                "the list grew from %d to %d records while it was read: reading its new end", end.total, grown
            )
            for number, page in self._map(self._fetch, range(end.page, self._pages(grown) + 1)):
                yield from self._fresh(page, totals)
                end.saw(number, page.total)

    def _pages(self, total: int) -> int:
        return max(1, math.ceil(total / self._limit))

    def _fresh(self, page: Page[T], totals: list[int]) -> Iterator[Page[T]]:
        """The page with only records not seen before; nothing when none is new."""
        totals.append(page.total)
        self.totals_seen.add(page.total)
        self.last_total = page.total
        self._check_order(page)
        new = [item for item in page.data if self._first_sight(item)]
        if new:
            yield page if len(new) == len(page.data) else page.model_copy(update={"data": new})

    def _first_sight(self, item: T) -> bool:
        key = self._record_id(item)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _check_order(self, page: Page[T]) -> None:
        if self._order_key is None:
            return
        keys = [self._order_key(item) for item in page.data]
        if keys != sorted(keys):
            logger.warning("the service ignored the requested order; judging passes by equal totals only")
            self._order_key = None

    def _settled(self, totals: list[int]) -> bool:
        if self.append_only:
            return min(totals) >= totals[0]
        return all(total == totals[0] for total in totals)
