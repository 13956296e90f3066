"""A sliding window of concurrent calls: at most ``window`` in flight, results yielded as they complete.

Used for the pages of a list and for per-entity calls (revision ids of thousands of delegations): work is
submitted as earlier work completes, never all at once, so memory and in-flight requests stay bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from itertools import islice
from typing import TypeVar

A = TypeVar("A")
R = TypeVar("R")

_worker = threading.local()


def bounded_map(
    executor: Executor, func: Callable[[A], R], items: Iterable[A], window: int
) -> Generator[tuple[A, R], None, None]:
    """``(item, func(item))`` for every item, in completion order, at most ``window`` running at once.

    The first failure cancels every call not yet started and is raised. Closing the iterator early
    cancels the rest as well. Called from inside a call it runs (a nested map), it runs sequentially on the
    calling thread, because waiting on the same pool from its own workers could deadlock it.
    """
    if getattr(_worker, "active", False):
        yield from ((item, func(item)) for item in items)
        return
    source = iter(items)
    pending: dict[Future[R], A] = {}
    try:
        _top_up(executor, func, source, pending, window)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                result = future.result()
                _top_up(executor, func, source, pending, window)
                yield item, result
    finally:
        for future in pending:
            future.cancel()


def _top_up(
    executor: Executor, func: Callable[[A], R], source: Iterator[A], pending: dict[Future[R], A], window: int
) -> None:
    for item in islice(source, window - len(pending)):
        pending[executor.submit(_as_worker, func, item)] = item


def _as_worker(func: Callable[[A], R], item: A) -> R:
    _worker.active = True
    try:
        return func(item)
    finally:
        _worker.active = False
