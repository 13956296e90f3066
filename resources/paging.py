"""Reading a whole paged list: the one paging strategy of the client.

Page 1 gives ``total``; pages 2..N are fetched concurrently through a sliding window (never all submitted
at once) and handed out as they complete, so no more than the window's pages are held at a time. Records
are de-duplicated by id across pages and passes.

What the service says about a list is evidence, not law:

- **Page size** is what the service serves. Page 1 asks for the caller's limit; when the service answers
  with a smaller ``limit`` (a cap) or serves fewer records than a page while more exist, the later pages
  are asked for that size, so that their offsets are the service's own.
- **The end** of a list is proven by a page that is short (fewer records than the page size) or empty: a
  pass whose last page came back full reads the next one (a list that is an exact multiple of the page
  size costs one call more, and a ``total`` too low by a page's records cannot hide them). A list read to
  such an end is ``complete``, whatever its ``total`` said; a ``total`` that is missing is not needed
  (pages are read until the end). A page past the end answered as no such page (``past_end``: a 404, a
  400 "page out of range", as some services answer an offset beyond their list) is an empty page, so the
  end of a list that is an exact multiple of the page size is proven too; a pass in which such a page
  comes before a page that lists records is refused (`PagingDriftError`).

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

4. A record that an earlier pass yielded and the settling pass no longer found was removed while the list
   was read: it is reported in ``vanished`` (at most one extra pass is needed to know).
5. A list whose pages give no ``total`` cannot show a change by its totals: it is read until two passes in
   a row list the same records (two passes when nothing changes, three after a change), the second with no
   record on two pages (see 6).
6. **Completeness.** A pass is accepted only when the ids it listed agree with the evidence: as many distinct
   ids (plus the records the contract rejected) as its final ``total`` says, and, in a pass whose order is not
   the trusted creation order, no record listed twice (a record that changed and moved while the list was
   paged: whatever order the service really uses, a move makes another record slide across a page boundary,
   read twice or missed, and a pass listing as many distinct ids as a steady total has read every record). A
   pass that disagrees is followed by another one; a pass that lists exactly the records of the pass before it
   is accepted when the total says fewer records (nothing moved between the two reads, so the difference is
   the service's own count), or as many as it served counting its repeats (a record listed twice on one page,
   which the total counts twice), and is ``reread``; one that served fewer records than the total twice is
   known to be short and raises `PagingDriftError` naming the total and the ids read: never returned as if it
   were whole. Records the contract kept out (rejected) have no id: they are told apart by their content
   (two alike to the byte are one) and held to the same rules (one served on two different pages of a pass
   is a move), and a pass with any is accepted only so, the pass before it having
   read each of them on the same page: a list reshuffled for every request, serving a rejected record twice
   in place of a usable one it missed, never is. A list still changing after ``MAX_PASSES``
   raises `PagingDriftError`: a set known to be short is never returned as if it were whole. A pass that
   lists a record on two different pages is never accepted, whatever it agrees with and in whatever order:
   the list shifted while it read, so it may have missed records, and so may the pass before it (two passes
   of a list reshuffled for every request can repeat the same records and miss the same ones). The trusted
   creation order is no exception: an append repeats a record only on the page read again, never on two
   pages, and the order is judged within each page, where a page of one record always looks in order.
7. **The newest copy.** A record met again with a later updated-at than the copy yielded (it changed while
   the list was read) is kept in ``newer`` (the latest copy per id); the caller replaces what it kept.

Why this one: it costs no extra call when nothing changes (the common case, but for a last page that is
exactly full), and under the steady trickle
of inserts and updates of a live tenant it completes in one pass, where re-reading until two passes agree
would never finish. What totals cannot reveal is a removal exactly offset by an insert between two page
fetches; the service soft-deletes (``status`` DELETED, ``isDeleted``), so removals from a list are rare.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, KeysView
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from models.base import Page
from resources.errors import PagingDriftError

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")
Listing = tuple[frozenset[str], frozenset[tuple[int, tuple[str, ...]]]]
"""What a pass listed (`_Pass.listing`): its ids, and each page's kept-out records."""

MAX_PASSES = 3
"""Passes over a drifting list before giving up with `PagingDriftError`."""
MAX_EXTENSIONS = 20
"""Rounds of reading a growing list's new last pages, and pages read past a full last page to find the
end of a list whose total is too low; a list still going on after these is left incomplete, which the
completeness check then reports."""

logger = logging.getLogger(__name__)


class _End:
    """The highest page a pass has read: its number, the total its answer reported, the records served."""

    def __init__(self, page: int, answer: Page[Any]) -> None:
        self.page, self.total, self.served = page, answer.total, answer.served

    def saw(self, page: int, answer: Page[Any]) -> None:
        """Note one answer; a later answer of the same page replaces the earlier one. A page answered as
        past the end reports no total: the last one reported stands (else a list whose total overcounts
        would escape the completeness check whenever its service answers such a page with a 404)."""
        if page >= self.page:
            self.page, self.served = page, answer.served
            self.total = answer.total if answer.total is not None else self.total


@dataclass
class _Pass:
    """What one pass over the list saw: every total reported, every id listed, the ids it listed more than
    once, the pages that listed records and those answered as past the list's end, and, per page number,
    the records the service served there that ``data`` does not hold (kept out by a record contract)."""

    totals: list[int] = field(default_factory=list)
    repeated: set[str] = field(default_factory=set)
    page_of: dict[str, int] = field(default_factory=dict)
    """Id -> the page that listed it first in this pass. Its keys are the ids the pass listed (`ids`): no set
    of them is kept beside it, which held each id read a second time."""
    crossed: set[str] = field(default_factory=set)
    """The ids listed on two different pages: the list shifted while the pass read."""
    filled: set[int] = field(default_factory=lambda: {1})
    past_end: set[int] = field(default_factory=set)
    kept_out: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Page number -> the fingerprints (`fingerprint`) of the records its latest answer served that the
    record contract kept out: they have no usable id, so they are told apart by their content."""
    kept_out_page: dict[str, int] = field(default_factory=dict)
    """Kept-out record's fingerprint -> the page that served it first in this pass."""
    kept_out_crossed: set[str] = field(default_factory=set)
    """The kept-out records served on two different pages (as `crossed`, for records without an id)."""
    served: dict[int, int] = field(default_factory=dict)
    """Page number -> the records its latest answer served, repeats and kept-out ones included."""

    @property
    def ids(self) -> KeysView[str]:
        """Every id the pass listed."""
        return self.page_of.keys()

    def kept_out_counts(self) -> Counter[str]:
        """Each kept-out record's fingerprint -> how often the pass read it."""
        return Counter(key for keys in self.kept_out.values() for key in keys)

    def listed(self) -> int:
        """Distinct records the pass listed, the kept-out ones included (alike to the byte: one)."""
        return len(self.ids) + len(self.kept_out_counts())

    def listing(self) -> Listing:
        """What a second pass must list to show that nothing moved: the same ids, and each kept-out
        record on the same page (a list reshuffled for every request places them anew)."""
        placed = frozenset((number, tuple(sorted(keys))) for number, keys in self.kept_out.items() if keys)
        return frozenset(self.ids), placed


def fingerprint(text: str) -> str:
    """A kept-out record's identity within a read: a digest of its JSON text as served."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class Mapper(Protocol):
    """Runs ``func`` over ``items`` concurrently, yielding ``(item, result)`` as each completes."""

    def __call__(self, func: Callable[[A], R], items: Iterable[A]) -> Iterator[tuple[A, R]]: ...


Fetch = Callable[[int, int], Page[T]]
"""Fetch one page: ``(page number, page size)`` -> the page."""
Updated = Callable[[T], datetime | None]
"""When a record was last updated (None: it does not say)."""


class PageStream(Generic[T]):
    """The pages of one paged list, read once. Iterating yields pages holding only records not yielded
    before (a page left empty by de-duplication is skipped); `items` yields the records.

    After (or during) iteration: ``total`` is page 1's total of the first pass, ``last_total`` the total
    the list's end reported, ``totals_seen`` every distinct total, ``passes`` the passes made, ``records``
    the records yielded, ``page_size`` the size the service serves, ``complete`` whether the last pass
    read to a short or empty page, ``vanished`` the ids yielded that the settling pass no longer found,
    ``reread`` whether the settling pass was accepted because it listed exactly the records of the pass
    before it, and ``newer`` the latest copy of each record met again with a later ``updated`` than the
    copy yielded.
    """

    def __init__(
        self,
        fetch: Fetch[T],
        *,
        limit: int,
        record_id: Callable[[T], str],
        mapper: Mapper,
        order_key: Callable[[T], Any] | None,
        describe: Callable[[str], PagingDriftError],
        max_passes: int = MAX_PASSES,
        past_end: Callable[[Exception], bool] = lambda error: False,
        updated: Updated[T] | None = None,
    ) -> None:
        self._fetch_answer = fetch
        self._past_end = past_end
        self._updated_of = updated
        self._updated: dict[str, datetime | None] = {}
        """Every id yielded -> the updated-at of the copy yielded (None without ``updated``): the stream's
        record of what it has yielded, one entry a record."""
        self._limit = limit
        self._record_id = record_id
        self._map = mapper
        self._order_key = order_key
        self._describe = describe
        self._max_passes = max_passes
        self._started = False
        self.total: int | None = None
        self.last_total: int | None = None
        self.totals_seen: set[int] = set()
        self.passes = 0
        self.page_size = limit
        self.complete = False
        self.vanished: list[str] = []
        self.reread = False
        self.newer: dict[str, T] = {}

    @property
    def records(self) -> int:
        """Records yielded so far."""
        return len(self._updated)

    @property
    def append_only(self) -> bool:
        """Whether passes are judged append-only (see the module docstring)."""
        return self._order_key is not None

    def __iter__(self) -> Iterator[Page[T]]:
        if self._started:
            raise RuntimeError("a PageStream can be iterated only once")
        self._started = True
        previous: Listing | None = None
        for number in range(1, self._max_passes + 1):
            self.passes = number
            current = _Pass()
            yield from self._pass(current)
            if self._settled(current, previous):
                self.vanished = sorted(self._updated.keys() - current.ids)
                return
            previous = current.listing()
            logger.info(
                "the list changed during pass %d of at most %d (totals %s; %d listed, %d twice)",
                number,
                self._max_passes,
                sorted(set(current.totals)),
                current.listed(),
                len(current.repeated),
            )
        raise self._describe(
            f"the list changed during each of {self._max_passes} passes (totals seen: "
            f"{sorted(self.totals_seen)}; the last pass listed {current.listed()} records, "
            f"{len(current.repeated)} of them twice, "
            f"{len(current.crossed) + len(current.kept_out_crossed)} of them on two pages); "
            "no consistent read"
        )

    def items(self) -> Iterator[T]:
        """Every record once, in the order pages complete."""
        for page in self:
            yield from page.data

    def _pass(self, current: _Pass) -> Iterator[Page[T]]:
        first = self._fetch_answer(1, self._limit)
        if self.total is None:
            self.total = first.total
        size = self.page_size = self._served_size(first)
        yield from self._fresh(1, first, current)
        end = _End(1, first)
        pages = range(2, self._pages(first.total, size) + 1)
        for number, page in self._map(lambda n: self._fetch(current, n, size), pages):
            yield from self._fresh(number, page, current)
            end.saw(number, page)
        if self.append_only:
            yield from self._read_growth(end, current, size)
        yield from self._read_to_end(end, current, size)
        self._check_end(current)
        self.last_total = end.total

    def _fetch(self, current: _Pass, number: int, size: int) -> Page[T]:
        """Page ``number`` (2 or more); an answer that says there is no such page (`past_end`: a 404, a 400
        "page out of range") is an empty page, provided no later page of the pass lists records."""
        try:
            page = self._fetch_answer(number, size)
        except Exception as error:
            if not self._past_end(error):
                raise
            logger.info("page %d was answered as past the end of the list (%s)", number, error)
            current.past_end.add(number)  # set.add is atomic: pages are fetched on several threads
            return Page[T](page=number, limit=size, total=None, data=[])
        if page.served:
            current.filled.add(number)
        return page

    def _check_end(self, current: _Pass) -> None:
        """Refuse a pass in which a page said to be past the end comes before a page that lists records."""
        if current.past_end and min(current.past_end) < max(current.filled):
            raise self._describe(
                f"page {min(current.past_end)} was answered as past the end of the list, but page "
                f"{max(current.filled)} lists records"
            )

    def _served_size(self, first: Page[T]) -> int:
        """The page size the service serves, judged from page 1 (see the module docstring)."""
        size = first.limit if 0 < first.limit < self._limit else self._limit
        if 0 < first.served < size and (first.total is None or first.total > first.served):
            size = first.served
        if size != self._limit and size != self.page_size:
            logger.warning(
                "the service serves %d records a page although %d were asked for: following it",
                size,
                self._limit,
            )
        return size

    def _read_growth(self, end: _End, current: _Pass, size: int) -> Iterator[Page[T]]:
        """Read the pages a growing list gained while it was read, until its last page has seen every
        record the latest answers reported."""
        grown = max(current.totals, default=None)
        for _ in range(MAX_EXTENSIONS):
            if grown is None or ((end.total or 0) >= grown and end.page >= self._pages(grown, size)):
                return
            logger.info(
                "the list grew from %s to %d records while it was read: reading its new end", end.total, grown
            )
            answered: list[int] = []
            for number, page in self._map(
                lambda n: self._fetch(current, n, size), range(end.page, self._pages(grown, size) + 1)
            ):
                yield from self._fresh(number, page, current)
                end.saw(number, page)
                answered += [page.total] if page.total is not None else []
            # Only this round's answers: a total that page 1 reported before a removal must not be chased.
            grown = max(answered, default=None)

    def _read_to_end(self, end: _End, current: _Pass, size: int) -> Iterator[Page[T]]:
        """Read past a last page that came back full until a short or empty page proves the end (a total
        too low by the records of a page would otherwise hide them). Without a total to go by the whole
        list is read this way; a page that lists nothing new to this pass (a service repeating itself)
        or, with a total, `MAX_EXTENSIONS` pages past it leave it incomplete."""
        rounds = 0
        while end.served >= size > 0:
            listed = len(current.ids)
            rounds += 1
            if end.total is not None and rounds > MAX_EXTENSIONS:
                self.complete = False
                return
            page = self._fetch(current, end.page + 1, size)
            yield from self._fresh(end.page + 1, page, current)
            end.saw(end.page + 1, page)
            if page.data and len(current.ids) == listed:  # every record it listed was listed already
                self.complete = False
                return
        self.complete = True

    @staticmethod
    def _pages(total: int | None, size: int) -> int:
        return max(1, math.ceil((total or 0) / size))

    def _fresh(self, number: int, page: Page[T], current: _Pass) -> Iterator[Page[T]]:
        """Page ``number`` (as asked for: a service may misreport it) with only records not seen before;
        nothing when none is new."""
        if page.total is not None:
            current.totals.append(page.total)
            self.totals_seen.add(page.total)
        self._check_order(page)
        current.kept_out[number] = tuple(fingerprint(text) for text in page.kept_out)
        for key in current.kept_out[number]:
            if current.kept_out_page.setdefault(key, number) != number:
                current.kept_out_crossed.add(key)
        current.served[number] = page.served
        new = []
        for item in page.data:
            key = self._record_id(item)
            listed_on = current.page_of.get(key)
            if listed_on is None:
                current.page_of[key] = number
            else:
                current.repeated.add(key)
                if listed_on != number:
                    current.crossed.add(key)
            if key not in self._updated:
                self._updated[key] = self._updated_of(item) if self._updated_of else None
                new.append(item)
            elif self._updated_of is not None:
                self._keep_newest(key, item, self._updated_of(item))
        if new:
            yield page if len(new) == len(page.data) else page.model_copy(update={"data": new})

    def _keep_newest(self, key: str, item: T, updated: datetime | None) -> None:
        """Keep ``item`` in ``newer`` when it was updated after the copy kept of its record."""
        kept = self._updated.get(key)
        try:
            later = updated is not None and (kept is None or updated > kept)
        except TypeError:  # one stamp with an offset, one without: neither can be called the later
            return
        if later:
            self._updated[key] = updated
            self.newer[key] = item

    def _check_order(self, page: Page[T]) -> None:
        if self._order_key is None:
            return
        keys = [self._order_key(item) for item in page.data]
        try:
            in_order = keys == sorted(keys)
        except TypeError:  # a record without its creation time cannot be placed in the order
            logger.warning("records lack the creation time the list is sorted by; judging passes by totals")
            self._order_key = None
            return
        if not in_order:
            logger.warning("the service ignored the requested order; judging passes by equal totals only")
            self._order_key = None

    def _settled(self, current: _Pass, previous: Listing | None) -> bool:
        """Whether a pass can be trusted: by its totals and by the ids it listed agreeing with them, or by
        a second pass that lists exactly the records of the one before (when the service gives no total,
        nothing else can reveal a removal; when the ids disagree with the total, nothing moved between
        the two reads). See the module docstring, 4 to 6."""
        if current.crossed or current.kept_out_crossed:
            # A record read on two pages: the list shifted during the pass, whatever it agrees with, so it may
            # have missed one. In the trusted creation order too: an append only ever repeats a record on the
            # page re-read, and order is judged page by page (a page of one record always looks in order).
            return False
        totals = current.totals
        again = previous is not None and current.listing() == previous
        if not totals:
            return again
        steady = min(totals) >= totals[0] if self.append_only else all(t == totals[0] for t in totals)
        if not steady:
            return False
        short = self.last_total is not None and current.listed() < self.last_total
        kept_out = current.kept_out_counts()
        read_twice = bool(current.repeated) or any(count > 1 for count in kept_out.values())
        moved = read_twice and not self.append_only
        # A record the contract kept out has no id: it is told apart by its content, and two records
        # alike to the byte are one. Only a second pass listing the same, each kept-out record on the
        # same page, shows that none was read twice in place of one missed.
        if not (short or moved or kept_out):
            return True
        self.reread = again
        if again and self.last_total is not None and sum(current.served.values()) < self.last_total:
            raise self._describe(
                f"read to its end twice, the service served the same {current.listed()} records both "
                f"times ({len(current.ids)} ids read) but its total says {self.last_total}; a list known "
                "to be short is never committed"
            )
        return again
