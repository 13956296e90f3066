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

When the service answers 429 anyway (a wrong plan, another process of the same tenant), every request of
the tenant pauses until Retry-After has passed and the rate is halved; each later success adds back
``RECOVERY_STEP`` of the plan rate (additive increase, multiplicative decrease), up to the plan rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

SAFETY_RATE_FACTOR = 0.99
JITTER_ALLOWANCE_S = 0.5
RECOVERY_STEP = 0.02
"""Share of the plan rate regained per successful request after a 429."""
MIN_RATE_FACTOR = 1 / 64
"""The rate never falls below this share of the plan rate, however many 429s arrive."""
DEFAULT_RETRY_AFTER_S = 1.0
"""Pause after a 429 without a (valid) Retry-After header."""
MAX_SLEEP_S = 1.0
"""Longest single sleep, so that a pause that starts meanwhile is noticed."""


class TokenBucket:
    """A thread-safe token bucket with the safety margin and the 429 behaviour of the module docstring."""

    def __init__(
        self,
        rate_per_minute: float,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        self._paused_until = 0.0
        self.waited_s = 0.0
        """Seconds all requests together spent blocked in `acquire`."""
        self.configure(rate_per_minute, burst)

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

    @property
    def rate_per_minute(self) -> float:
        """The rate the bucket refills at now (lower than the plan's after 429s)."""
        return self._rate * 60

    def acquire(self) -> float:
        """Block until a token is free and no pause is in force; returns the seconds waited."""
        started = self._clock()
        while (delay := self._take()) > 0:
            self._sleep(min(delay, MAX_SLEEP_S))
        waited = self._clock() - started
        with self._lock:
            self.waited_s += waited
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

    def rate_limited(self, retry_after_s: float | None) -> None:
        """A 429 arrived: pause every request until Retry-After, and halve the rate once per pause."""
        with self._lock:
            now = self._clock()
            self._refill(now)
            if now >= self._paused_until:
                self._rate = max(self._plan_rate * MIN_RATE_FACTOR, self._rate / 2)
            pause = DEFAULT_RETRY_AFTER_S if retry_after_s is None else retry_after_s
            self._paused_until = max(self._paused_until, now + pause)
            # Nothing accrues during the pause: the first request after it is spaced, not a burst.
            self._tokens = 0.0
            self._stamp = self._paused_until

    def succeeded(self) -> None:
        """A request got through: win back some of the rate lost to 429s."""
        with self._lock:
            if self._rate < self._plan_rate:
                self._refill(self._clock())
                self._rate = min(self._plan_rate, self._rate + self._plan_rate * RECOVERY_STEP)


_registry: dict[tuple[str, str], TokenBucket] = {}
_registry_lock = threading.Lock()


def shared_bucket(base_url: str, tenant_id: str, rate_per_minute: float, burst: float) -> TokenBucket:
    """The process-wide bucket of one tenant of one service, created or re-planned on demand.

    Every client of the same tenant shares it, because the service's budget is per tenant. A client with a
    different plan re-plans the bucket (the latest configuration wins).
    """
    key = (base_url, tenant_id)
    with _registry_lock:
        bucket = _registry.get(key)
        if bucket is None:
            bucket = _registry[key] = TokenBucket(rate_per_minute, burst)
        elif bucket.plan != (rate_per_minute, burst):
            bucket.configure(rate_per_minute, burst)
        return bucket


def clear_buckets() -> None:
    """Forget every bucket: the next client starts from a full budget (tests, or a new run)."""
    with _registry_lock:
        _registry.clear()
