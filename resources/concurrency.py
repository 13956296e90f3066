"""A sliding window of concurrent calls: at most ``window`` in flight, results yielded as they complete.

Used for the pages of a list and for per-entity calls (revision ids of thousands of delegations): work is
submitted as earlier work completes, never all at once, so memory and in-flight requests stay bounded.

The items may arrive slowly: a `Feed` that another thread fills while it streams a list (the delegation
ids E11 needs, say) can be mapped while it is still being filled, so that the calls start at once instead
of after the whole list. A feeder thread drains the items into the same event queue that completed calls
report to, so a slow source never delays handing out a finished result.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

A = TypeVar("A")
R = TypeVar("R")
T = TypeVar("T")

_worker = threading.local()
_END = object()


class Feed(Generic[T]):
    """A thread-safe stream of items: producers `put` then `close`; iterating blocks until the next item
    and ends once the feed is closed and drained. ``close(error)`` makes the iteration raise ``error``."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()

    def put(self, item: T) -> None:
        """Add an item."""
        self._queue.put(item)

    def close(self, error: BaseException | None = None) -> None:
        """No more items (or: the producer failed with ``error``)."""
        self._queue.put(error if error is not None else _END)

    def __iter__(self) -> Iterator[T]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]


def bounded_map(
    executor: Executor, func: Callable[[A], R], items: Iterable[A], window: int
) -> Generator[tuple[A, R], None, None]:
    """``(item, func(item))`` for every item, in completion order, at most ``window`` running at once.

    The first failure (of a call or of the source) cancels every call not yet started and is raised.
    Closing the iterator early cancels the rest as well. Called from inside a call it runs (a nested map),
    it runs sequentially on the calling thread, because waiting on the same pool from its own workers could
    deadlock it.
    """
    if getattr(_worker, "active", False):
        yield from ((item, func(item)) for item in items)
        return
    events: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
    # The feeder pulls at most ``window`` items ahead of the calls, so a large source is never drained.
    room, stopped = threading.Semaphore(window), threading.Event()
    feeder = threading.Thread(
        target=_feed, args=(items, events, room, stopped), daemon=True, name="adm-feeder"
    )
    feeder.start()
    pending: dict[Future[R], A] = {}
    backlog: deque[A] = deque()
    source_done = False
    try:
        while not (source_done and not pending and not backlog):
            kind, value = events.get()
            if kind == "item":
                backlog.append(value)  # type: ignore[arg-type]
            elif kind == "end":
                source_done = True
            elif kind == "error":
                raise value  # type: ignore[misc]
            else:
                future: Future[R] = value  # type: ignore[assignment]
                item, result = pending.pop(future), future.result()
            _top_up(executor, func, backlog, pending, window, events, room)
            if kind == "done":
                yield item, result
    finally:
        for future in pending:
            future.cancel()
        # Wake the feeder if it waits for room, so that it ends instead of outliving the map.
        stopped.set()
        room.release()


def _feed(
    items: Iterable[A],
    events: queue.SimpleQueue[tuple[str, object]],
    room: threading.Semaphore,
    stopped: threading.Event,
) -> None:
    try:
        source = iter(items)
        while room.acquire() and not stopped.is_set() and (item := next(source, _END)) is not _END:
            events.put(("item", item))
    except BaseException as error:  # handed to the consumer, which raises it
        events.put(("error", error))
        return
    events.put(("end", None))


def _top_up(
    executor: Executor,
    func: Callable[[A], R],
    backlog: deque[A],
    pending: dict[Future[R], A],
    window: int,
    events: queue.SimpleQueue[tuple[str, object]],
    room: threading.Semaphore,
) -> None:
    while backlog and len(pending) < window:
        item = backlog.popleft()
        room.release()
        future = executor.submit(_as_worker, func, item)
        pending[future] = item
        future.add_done_callback(lambda done: events.put(("done", done)))


def _as_worker(func: Callable[[A], R], item: A) -> R:
    _worker.active = True
    try:
        return func(item)
    finally:
        _worker.active = False
