"""Long waits told as they happen: a wait for the warehouse's writer, a tenant lock or the rate limit that
lasts past `NOTICE_AFTER_S` is logged once when it passes it and once when it ends, naming what it waits
for. (The ``resources`` logger reaches a Dagster run's log as events, `pipelines/dagster.yaml`.) Without
them a run's log can stay silent for minutes while it waits for another process.

Several threads may wait for the same thing (the 8 workers of an extract, on the tenant's rate limit): a
wait lasts while any of them waits, and its seconds are wall-clock seconds, counted once however many
threads wait together.

A stop (SIGTERM, SIGINT, a run's budget running out) ends every such wait at its next poll: within the block
of `ended_by`, a wait raises `WaitEndedError` once the stop is requested, so a run stopped while it waits for
another process's writer ends in a second instead of after ``ADM_LOCK_WAIT_S``.

The HTTP connection pool is not among them: it holds as many connections as the client's concurrency
slots let requests be in flight, and a request gives its connection back before its slot, so no request
waits for a connection (`resources.transport`; tests/test_client_ratelimit.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from models.errors import AuthoritySyncError

logger = logging.getLogger(__name__)

NOTICE_AFTER_S = 2.0
"""A wait longer than this is a log line (a run event) when it passes it and when it ends."""


class WaitEndedError(AuthoritySyncError, RuntimeError):
    """A stop ended a wait before what it waited for came."""


_stops: list[Callable[[], bool]] = []
"""Whether each stop of the `ended_by` blocks in progress is requested: any one ends every wait."""


@contextmanager
def ended_by(stop: Callable[[], bool]) -> Iterator[None]:
    """Within the block, a wait that goes on once ``stop()`` is true ends with `WaitEndedError`."""
    _stops.append(stop)
    try:
        yield
    finally:
        _stops.remove(stop)


class SharedWait:
    """The waits of one or more threads for one thing (``describe()`` names it, and who holds it): the
    wall time during which any thread waits, and a log line for each wait longer than `NOTICE_AFTER_S`."""

    def __init__(self, describe: Callable[[], str], clock: Callable[[], float] = time.monotonic) -> None:
        self._describe = describe
        self._clock = clock
        self._lock = threading.Lock()
        self._waiters = 0
        self._since = 0.0
        self._told: str | None = None
        """What the current wait was told to wait for, once it was; None before."""
        self._seconds = 0.0

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """One thread waits for the duration of the block (it calls `still` from its polling loop)."""
        with self._lock:
            if self._waiters == 0:
                self._since, self._told = self._clock(), None
            self._waiters += 1
        try:
            yield
        finally:
            self._leave()

    def still(self) -> None:
        """A waiting thread is still waiting: tell of the wait once it has lasted `NOTICE_AFTER_S`; raise
        `WaitEndedError` if a stop came (`ended_by`)."""
        if any(stopped() for stopped in _stops):
            raise WaitEndedError(f"stopped while waiting for {self._describe()}")
        with self._lock:
            lasted = self._clock() - self._since
            if self._told is not None or self._waiters == 0 or lasted < NOTICE_AFTER_S:
                return
            self._told = self._describe()
        logger.info("waiting for %s (%.0f s so far)", self._told, lasted)

    def _leave(self) -> None:
        with self._lock:
            self._waiters -= 1
            if self._waiters:
                return
            lasted = self._clock() - self._since
            self._seconds += lasted
            told = self._told
        if told is not None:
            logger.info("waited %.1f s for %s", lasted, told)

    @property
    def seconds(self) -> float:
        """Wall-clock seconds during which at least one thread waited (so far, the current wait too)."""
        with self._lock:
            current = self._clock() - self._since if self._waiters else 0.0
            return self._seconds + current
