"""One token bucket per tenant of a service, shared by every request of the process.

The service limits each tenant with a token bucket (public-reference.md: the plan's rate per minute,
bursts up to twice that). The client keeps its own bucket of the same shape so that it never sends faster
than the service accepts, instead of learning the limit from 429s (each of which is a wasted call).

Safety margin. The client's clock is not the service's: a request sent at ``t`` arrives at ``t + delay``
and delays vary, so requests the client spaced correctly can arrive bunched together. If delays vary by at
most ``J`` seconds, arrivals in any window exceed the client's spacing by at most ``rate * J`` requests. The
client's bucket is therefore ``ceil(rate * JITTER_ALLOWANCE_S)`` tokens smaller than the service's, so
that under a correctly configured plan a sync trips no 429 at all: over any window, the requests that can
arrive are those sent in it and up to ``J`` seconds before, at most the smaller bucket plus the refill of
the window and of ``J``, which the service's bucket holds. It refills at ``SAFETY_RATE_FACTOR`` of the plan
rate, a 1% allowance for the two clocks' rates. The margin costs ``JITTER_ALLOWANCE_S`` of burst and 1% of
throughput.

When the service answers 429 anyway, every request of the tenant pauses until Retry-After has passed: a
429 costs the pause the service asks for, no more. A *lone* 429 (a passing overload, another client's
burst) changes nothing else: after the pause the bucket carries on with the tokens and the rate it had.
Only a 429 that *repeats despite the pause* (a request sent after a pause ended is refused again within
``REPEAT_WINDOW_S``) shows that the plan is wrong or another process shares the budget: then the bucket is
emptied and the rate halved, and each later success adds back ``RECOVERY_STEP`` of the plan rate (additive
increase, multiplicative decrease), up to the plan rate. 429s answering requests sent before the pause
began belong to the same refusal and only extend the pause.

The bucket remembers across runs and processes. The service's bucket does not refill because a new run
starts: a run that follows another one of the same tenant (a retry, a queued run, the next CLI command)
finds the service's bucket as the previous run left it. With a state file (`shared_bucket`'s
``state_file``), the bucket is saved there (its tokens, rate and pause, stamped with the wall clock) at
most once a `SAVE_EVERY_S` while it is used and when its client closes, and a new bucket starts from the
saved state plus what has refilled since, instead of full.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SAFETY_RATE_FACTOR = 0.99
JITTER_ALLOWANCE_S = 0.5
REPEAT_WINDOW_S = 60.0
"""A 429 within this long after the previous pause ended, for a request sent after it, is a repeat."""
RECOVERY_STEP = 0.02
"""Share of the plan rate regained per successful request after a 429."""
MIN_RATE_FACTOR = 1 / 64
"""The rate never falls below this share of the plan rate, however many 429s arrive."""
DEFAULT_RETRY_AFTER_S = 1.0
"""Pause after a 429 without a (valid) Retry-After header."""
MAX_SLEEP_S = 1.0
"""Longest single sleep, so that a pause that starts meanwhile is noticed."""
SAVE_EVERY_S = 1.0
"""A bucket with a state file saves its state at most this often while requests take tokens."""


class TokenBucket:
    """A thread-safe token bucket with the safety margin and the 429 behaviour of the module docstring."""

    def __init__(
        self,
        rate_per_minute: float,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        state_file: Path | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        self.state_file = state_file
        self._save_failed = False
        self._saved_at = -math.inf
        self._paused_until = -math.inf
        self._pause_began = -math.inf
        """When the latest pause started: a 429 for a request sent before then is part of it."""
        self.waited_s = 0.0
        """Seconds all requests together spent blocked in `acquire`."""
        self.configure(rate_per_minute, burst)
        self._restore()

    def configure(self, rate_per_minute: float, burst: float) -> None:
        """Adopt a plan: full bucket, plan rate (minus the safety margin), no pause."""
        with self._lock:
            self.plan = (rate_per_minute, burst)
            self._plan_rate = rate_per_minute / 60 * SAFETY_RATE_FACTOR
            self._rate = self._plan_rate
            margin = math.ceil(rate_per_minute / 60 * JITTER_ALLOWANCE_S)
            self.capacity = max(1.0, burst - margin)
            self._tokens = self.capacity
            self._stamp = self._clock()

    def now(self) -> float:
        """The bucket's clock, to stamp when a request was sent (see `rate_limited`)."""
        return self._clock()

    @property
    def rate_per_minute(self) -> float:
        """The rate the bucket refills at now (lower than the plan's after 429s)."""
        return self._rate * 60

    def acquire(self, halt: threading.Event | None = None, still: Callable[[], None] | None = None) -> float:
        """Block until a token is free and no pause is in force, or until ``halt`` is set (then without a
        token: the caller sends nothing), calling ``still`` at least once a second while blocked; returns
        the seconds waited."""
        started = self._clock()
        while (delay := self._take()) > 0 and not (halt is not None and halt.is_set()):
            if still is not None:
                still()
            self._sleep(min(delay, MAX_SLEEP_S))
        waited = self._clock() - started
        with self._lock:
            self.waited_s += waited
            due = self.state_file is not None and self._clock() - self._saved_at >= SAVE_EVERY_S
        if due:
            self.save()
        return waited

    def _take(self) -> float:
        """Take a token: 0 when granted, else the seconds until one may be."""
        with self._lock:
            now = self._clock()
            self._refill(now)
            if now < self._paused_until:
                return self._paused_until - now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return (1 - self._tokens) / self._rate

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now

    def rate_limited(self, retry_after_s: float | None, sent_at: float | None = None) -> None:
        """A 429 arrived for a request sent at ``sent_at`` (this clock; now if not given): pause every
        request until Retry-After has passed; slow down only if it repeats despite an honoured pause."""
        with self._lock:
            now = self._clock()
            self._refill(now)
            pause = DEFAULT_RETRY_AFTER_S if retry_after_s is None else retry_after_s
            sent = now if sent_at is None else sent_at
            if sent >= self._pause_began:
                if sent >= self._paused_until and now - self._paused_until < REPEAT_WINDOW_S:
                    self._slow_down()
                self._pause_began = now
            self._paused_until = max(self._paused_until, now + pause)
            # Nothing accrues during the pause, so the bucket resumes with the tokens it had.
            self._stamp = max(self._stamp, self._paused_until)

    def _slow_down(self) -> None:
        """The 429 repeated although the last pause was honoured: empty the bucket, halve the rate."""
        self._rate = max(self._plan_rate * MIN_RATE_FACTOR, self._rate / 2)
        self._tokens = 0.0

    def pause_remaining(self) -> float:
        """Seconds until the current 429 pause ends (0 when none is in force)."""
        with self._lock:
            return max(0.0, self._paused_until - self._clock())

    def succeeded(self) -> None:
        """A request got through: win back some of the rate lost to 429s."""
        with self._lock:
            if self._rate < self._plan_rate:
                self._refill(self._clock())
                self._rate = min(self._plan_rate, self._rate + self._plan_rate * RECOVERY_STEP)

    # -- the state shared with later runs -----------------------------------------------------------------

    def save(self) -> None:
        """Write the bucket's state to its state file (if it has one), atomically: a reader sees the old
        state or the new one. A failure to write costs only the memory of the bucket, never the run."""
        if self.state_file is None:
            return
        with self._lock:
            now = self._clock()
            self._refill(now)
            self._saved_at = now
            wall = time.time()
            state = {
                "plan": list(self.plan),
                "tokens": self._tokens,
                "rate_per_minute": self._rate * 60,
                "at": wall + (self._stamp - now),
                "paused_until": wall + max(0.0, self._paused_until - now),
            }
        temporary = self.state_file.with_name(
            f".{self.state_file.name}.{os.getpid()}.{threading.get_ident()}"
        )
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(state), encoding="utf-8")
            temporary.replace(self.state_file)
        except OSError as error:
            with contextlib.suppress(OSError):  # a folder that is a file cannot hold the temporary either
                temporary.unlink(missing_ok=True)
            self._report_save_failure(error)

    def _report_save_failure(self, error: OSError) -> None:
        """Log a failed save once per bucket: the run goes on (the next run starts with a full bucket and
        may meet 429s), but the operator learns why the state is not kept."""
        if not self._save_failed:
            self._save_failed = True
            logger.warning(
                "rate-limit state not saved to %s (%s): the next run starts with a full bucket",
                self.state_file,
                error.strerror or type(error).__name__,
            )

    def _restore(self) -> None:
        """Start from the saved state of an earlier bucket of the same plan, plus the refill since it was
        saved (a state of another plan, or unreadable, is ignored: the bucket starts full)."""
        state = _read_state(self.state_file)
        if state is None or state.get("plan") != list(self.plan):
            return
        with self._lock:
            now, wall = self._clock(), time.time()
            self._rate = min(
                self._plan_rate, max(self._plan_rate * MIN_RATE_FACTOR, state["rate_per_minute"] / 60)
            )
            self._tokens = min(self.capacity, max(0.0, state["tokens"]))
            self._stamp = now + (state["at"] - wall)
            self._paused_until = now + max(0.0, state["paused_until"] - wall)
            self._refill(now)


def _read_state(path: Path | None) -> dict[str, Any] | None:
    """A saved bucket state, or None when there is none or it cannot be read as one."""
    if path is None:
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    numbers = ("tokens", "rate_per_minute", "at", "paused_until")
    valid = isinstance(state, dict) and all(isinstance(state.get(key), int | float) for key in numbers)
    return state if valid else None


_registry: dict[tuple[str, str], TokenBucket] = {}
_registry_lock = threading.Lock()


def shared_bucket(
    base_url: str, tenant_id: str, rate_per_minute: float, burst: float, state_dir: Path | None = None
) -> TokenBucket:
    """The process-wide bucket of one tenant of one service, created or re-planned on demand.

    Every client of the same tenant shares it, because the service's budget is per tenant. A client with a
    different plan re-plans the bucket (the latest configuration wins). With ``state_dir``, a new bucket
    starts from the state the tenant's last bucket saved there (see the module docstring).
    """
    key = (base_url, tenant_id)
    with _registry_lock:
        bucket = _registry.get(key)
        if bucket is None:
            state_file = state_dir / state_file_name(base_url, tenant_id) if state_dir else None
            bucket = _registry[key] = TokenBucket(rate_per_minute, burst, state_file=state_file)
        elif bucket.plan != (rate_per_minute, burst):
            bucket.configure(rate_per_minute, burst)
        return bucket


def state_file_name(base_url: str, tenant_id: str) -> str:
    """The state file of one tenant of one service: the tenant id and a digest of the address."""
    digest = hashlib.sha256(base_url.encode()).hexdigest()[:12]
    return f"{tenant_id.lower()}.{digest}.json"


def clear_buckets() -> None:
    """Forget every bucket: the next client starts from a full budget (tests, or a new run)."""
    with _registry_lock:
        _registry.clear()
