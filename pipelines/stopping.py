"""Stopping a sync early and cleanly: on SIGTERM or SIGINT (a process supervisor, Ctrl-C, a Dagster run
termination, which reaches the run's process as one of them), or when the run outlives its wall-clock
budget.

A stop sends no further request (`resources.client.AdmClient.stop`): every read ends at its next call, the
revision lists fetched so far stay in the tenant's journal (`warehouse.staging.RevisionJournal`, the one a
killed run leaves), nothing is committed, and the run's row says ``interrupted`` (a signal) or ``failed``
(its budget) with one line saying why. The next run of the tenant reuses the journal.

Signal handlers can only be installed from the main thread (the CLI's and Dagster's step processes run
their steps there); elsewhere the previous handling stays.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from models.errors import AuthoritySyncError
from resources.client import AdmClient
from resources.metrics import MetricsSnapshot

if TYPE_CHECKING:  # for annotations only: this module runs no warehouse code
    from warehouse.runs import QuotaProjection

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

ROW_WAIT_S = 3.0
"""How long a signalled run waits for the warehouse's writer to write its row (a supervisor's grace period is
short). Past it the row stays as the run began it, and the next run records it ``killed`` with its calls."""

BUDGET_FACTOR = 3.0
"""A run's budget is this many times the time its calls take at the plan's rate (`run_allowance`) ..."""
BUDGET_SLACK_S = 600.0
"""... plus this much (the pages, the checks and the commit; a slow start)."""


class RunInterruptedError(AuthoritySyncError, RuntimeError):
    """A signal stopped the run: nothing was committed; its journal lets the next run resume."""

    def __init__(self, message: str, signal_number: int) -> None:
        self.signal_number = signal_number
        super().__init__(message)


class RunOverBudgetError(AuthoritySyncError, RuntimeError):
    """The run outlived its wall-clock budget: stopped, nothing committed; its journal lets the next run
    resume."""


_received: list[int] = []
"""The signal that stopped the latest run of this process, if one did (for the CLI: no next tenant)."""


def received_signal() -> int | None:
    """The signal that stopped the latest run of this process, or None."""
    return _received[-1] if _received else None


@dataclass
class RunStop:
    """Whether, and why, the run is stopping; stops the clients attached to it."""

    signal_number: int | None = None
    over_budget: str | None = None
    """Why the budget ran out (one line naming the slowest endpoint), once it has."""
    _clients: list[AdmClient] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def requested(self) -> bool:
        """Whether the run is stopping."""
        return self.signal_number is not None or self.over_budget is not None

    def attach(self, client: AdmClient) -> None:
        """Stop ``client`` when the run stops (at once if it already is)."""
        with self._lock:
            self._clients.append(client)
        if self.requested:
            client.stop()

    def _stop_clients(self) -> None:
        for client in list(self._clients):
            client.stop()

    def signalled(self, signal_number: int, _frame: FrameType | None = None) -> None:
        """The signal handler: note the first signal and stop the clients (no lock: it runs between two
        bytecodes of the main thread, which may hold it)."""
        if self.signal_number is None:
            self.signal_number = signal_number
            _received.append(signal_number)
        self._stop_clients()

    def budget_spent(self, why: str) -> None:
        """The wall-clock budget ran out (from its timer thread)."""
        if self.over_budget is None:
            self.over_budget = why
        self._stop_clients()

    def error(self, written: str) -> RunInterruptedError | RunOverBudgetError | None:
        """The error the stopped run ends with (``written``: what it wrote and leaves for the next run),
        or None."""
        if self.signal_number is not None:
            name = signal.Signals(self.signal_number).name
            return RunInterruptedError(
                f"interrupted by {name}: no further request sent, {written}", self.signal_number
            )
        if self.over_budget is not None:
            return RunOverBudgetError(f"{self.over_budget}: stopped, {written}")
        return None


@contextmanager
def stopping_on_signals(stop: RunStop) -> Iterator[None]:
    """SIGTERM and SIGINT stop the run instead of ending the process (main thread only), until the block
    ends; the handlers in place before come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    for number in STOP_SIGNALS:
        signal.signal(number, stop.signalled)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


PAUSE_POLL_S = 0.05
"""How often a pause looks whether a signal came (a handler cannot end a sleep; this bounds the delay)."""


def pause(seconds: float) -> int | None:
    """Wait ``seconds`` (before a retry) unless SIGTERM or SIGINT comes first, which ends the wait at once
    (`received_signal` then names it, as after a stopped run); returns that signal, or None."""
    stop = RunStop()
    deadline = time.monotonic() + seconds
    with stopping_on_signals(stop):
        while stop.signal_number is None and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, PAUSE_POLL_S))
    return stop.signal_number


def run_budget_s(expected_calls: int, rate_per_minute: float) -> float:
    """The wall-clock budget of a run expected to make ``expected_calls`` at ``rate_per_minute``."""
    return BUDGET_FACTOR * expected_calls * 60.0 / rate_per_minute + BUDGET_SLACK_S


Allowance = Callable[[], tuple[float, str]]
"""The budget a run has now, in seconds from its start, and where that comes from (for its message)."""


def run_allowance(
    fixed: float | None, rate_per_minute: float, projection: QuotaProjection | None, made: Callable[[], int]
) -> Allowance:
    """A run's budget: ``fixed`` (``ADM_RUN_BUDGET_S``) when set, else what its calls take at the plan's
    rate (`run_budget_s`), its calls being those expected (the estimate of the API budget check) or, once
    it has made more (``made``: its calls so far), those it made. A first run has no estimate: its budget
    grows with its calls, so that it stops only when they come at less than a third of the plan's rate (the
    slack aside), never for being the first; so does the run of a tenant that grew."""
    expected = projection.estimate if projection is not None else 0
    known = projection.estimated_from if projection is not None else "no estimate"

    def allowed() -> tuple[float, str]:
        if fixed is not None:
            return fixed, "ADM_RUN_BUDGET_S"
        calls = made()
        if calls > expected:
            source = f"{calls:,} calls made, more than the {expected:,} expected ({known})"
        else:
            source = f"{expected:,} expected calls ({known})"
        seconds = run_budget_s(max(calls, expected), rate_per_minute)
        return seconds, f"{source} at {rate_per_minute:g}/min; ADM_RUN_BUDGET_S overrides it"

    return allowed


@contextmanager
def budget_timer(stop: RunStop, allowed: Allowance, metrics: Callable[[], MetricsSnapshot]) -> Iterator[None]:
    """Stop the run when it outlives its budget before the block ends. ``allowed`` is asked at the start and
    again whenever the budget it gave runs out, and may have grown meanwhile (a run that made more calls
    than it was expected to is allowed their time): the run stops only once the time passed exceeds what
    ``allowed`` then says. The reason names the endpoint that took longest (from ``metrics`` then)."""
    watch = _BudgetWatch(stop, allowed, metrics)
    watch.check()
    try:
        yield
    finally:
        watch.end()


class _BudgetWatch:
    """The timer of `budget_timer`, armed again for what is left whenever the budget has grown."""

    def __init__(self, stop: RunStop, allowed: Allowance, metrics: Callable[[], MetricsSnapshot]) -> None:
        self._stop, self._allowed, self._metrics = stop, allowed, metrics
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._ended = False
        self._timer: threading.Timer | None = None

    def check(self) -> None:
        """Arm the timer for what is left of the budget, or stop the run when nothing is."""
        seconds, source = self._allowed()
        left = self._started + seconds - time.monotonic()
        with self._lock:
            if self._ended:
                return
            if left > 0:
                self._timer = threading.Timer(left, self.check)
                self._timer.daemon = True
                self._timer.start()
                return
            self._stop.budget_spent(
                f"the run took longer than its budget of {seconds:,.0f} s ({source}); "
                f"{slowest(self._metrics())}"
            )

    def end(self) -> None:
        """The block ended: no further check."""
        with self._lock:
            self._ended = True
            if self._timer is not None:
                self._timer.cancel()


def slowest(metrics: MetricsSnapshot) -> str:
    """The endpoint whose requests took longest in all, with its calls and time per call."""
    if not metrics.seconds:
        return "no request had answered yet"
    endpoint, seconds = max(metrics.seconds.items(), key=lambda item: item[1])
    calls = metrics.calls.get(endpoint, 0)
    each = f", {seconds / calls:.2f} s each" if calls else ""
    return f"the slowest endpoint: {endpoint} ({calls:,} calls, {seconds:,.0f} s in all{each})"


def exit_at_once(status: int) -> NoReturn:
    """End a process a signal stopped, its run's row and journal written: skipping the interpreter's
    teardown, which takes seconds with Dagster loaded (a supervisor's grace period is short)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
