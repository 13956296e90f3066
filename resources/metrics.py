"""What a client spent: API calls per endpoint, retries, 429s, bytes, time waited on the rate limiter and
access-key exchanges. API calls are the cost that matters on a real tenant (a monthly quota), so every HTTP
request sent counts, retries included."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from resources.waits import SharedWait


@dataclass(frozen=True)
class MetricsSnapshot:
    """The counters at one moment: immutable, plain values, ``as_dict()`` is JSON-ready."""

    calls: dict[str, int] = field(default_factory=dict)
    """HTTP requests sent per endpoint name (E1..E14, exchange, users, groups, positions, delegations);
    a private copy, so later calls of the client do not change it."""
    retries: int = 0
    rate_limited: int = 0
    """Answers with status 429."""
    bytes_received: int = 0
    limiter_wait_s: float = 0.0
    """Wall-clock seconds during which requests were blocked on the shared rate limiter (counted once
    however many of the client's workers waited together)."""
    exchanges: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    """Seconds requests spent on the network per endpoint (sending to the end of the answer), summed."""

    @property
    def api_calls(self) -> int:
        """Every HTTP request sent."""
        return sum(self.calls.values())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy, with ``api_calls`` added."""
        return asdict(self) | {"api_calls": self.api_calls}


class ClientMetrics:
    """Thread-safe counters of one client."""

    def __init__(self, rate_wait: SharedWait) -> None:
        self._lock = threading.Lock()
        self._rate_wait = rate_wait
        self._calls: Counter[str] = Counter()
        self._retries = 0
        self._rate_limited = 0
        self._bytes = 0
        self._exchanges = 0
        self._seconds: dict[str, float] = {}
        self._observer: Callable[[MetricsSnapshot], None] | None = None

    def observe(self, observer: Callable[[MetricsSnapshot], None] | None) -> None:
        """Call ``observer`` with the counters each time a request is about to leave (None: stop), one call
        at a time and in order, so that the last one it saw is the latest count."""
        with self._lock:
            self._observer = observer

    def request_sent(self, endpoint: str) -> None:
        """One HTTP request is about to leave for ``endpoint``."""
        with self._lock:
            self._calls[endpoint] += 1
            if self._observer is not None:
                self._observer(self._snapshot())

    def not_sent(self, endpoint: str) -> None:
        """The request `request_sent` counted for ``endpoint`` never reached the service (its TLS
        handshake failed): it is not an API call."""
        with self._lock:
            self._calls[endpoint] -= 1
            if not self._calls[endpoint]:
                del self._calls[endpoint]

    def response_received(self, size: int, status: int) -> None:
        """An answer of ``size`` body bytes arrived."""
        with self._lock:
            self._bytes += size
            self._rate_limited += status == 429

    def took(self, endpoint: str, seconds: float) -> None:
        """A request of ``endpoint`` spent ``seconds`` on the network."""
        with self._lock:
            self._seconds[endpoint] = self._seconds.get(endpoint, 0.0) + seconds

    def retried(self) -> None:
        """A request is about to be tried again."""
        with self._lock:
            self._retries += 1

    def exchanged(self) -> None:
        """The access key was exchanged for a token."""
        with self._lock:
            self._exchanges += 1

    def snapshot(self) -> MetricsSnapshot:
        """The counters now."""
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> MetricsSnapshot:
        return MetricsSnapshot(
            calls=dict(self._calls),
            retries=self._retries,
            rate_limited=self._rate_limited,
            bytes_received=self._bytes,
            limiter_wait_s=self._rate_wait.seconds,
            exchanges=self._exchanges,
            seconds=dict(self._seconds),
        )
