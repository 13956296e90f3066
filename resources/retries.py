"""When a failed request is tried again, and when it must not be (tenacity does the looping).

Reads (GET, and the access-key exchange, which changes nothing a retry could duplicate) are retried on
connection failures of any kind, timeouts, dropped connections, 429, 5xx and bodies that are not JSON,
with exponential backoff and full jitter.

Writes (PATCH, PUT, POST, DELETE) are retried only when the request certainly had no effect: a 429, or a
failure before the request left (connect error, connect or pool timeout). Any other failure after sending
(5xx, read timeout, dropped connection, unreadable answer) becomes `WriteOutcomeUnknown`: the write may
have been applied, so it must be verified by reading, never repeated blindly.

A 429 is retried without backoff of its own: the shared rate limiter already holds every request of the
tenant until Retry-After has passed. 401 is not handled here but by the client (one access-key exchange,
then one more try).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, wait_random_exponential

from resources.errors import (
    APIConnectionError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    ServiceError,
    WriteOutcomeUnknown,
    WriteResponseFormatError,
)
from resources.settings import ClientSettings

T = TypeVar("T")
OnRetry = Callable[[BaseException, int, float], None]
"""Called before each new try with the failure, the number of the try that failed and the sleep."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retry budget and backoff."""

    max_attempts: int
    rate_limited_max_attempts: int
    backoff_initial_s: float
    backoff_max_s: float

    @classmethod
    def from_settings(cls, settings: ClientSettings) -> RetryPolicy:
        """The policy a client's settings ask for."""
        return cls(
            settings.max_attempts,
            settings.rate_limited_max_attempts,
            settings.backoff_initial_s,
            settings.backoff_max_s,
        )

    def call(
        self,
        attempt: Callable[[], T],
        retry_safe: bool,
        on_retry: OnRetry,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """Run ``attempt`` until it succeeds or fails in a way that must not, or need not, be retried;
        ``sleep`` waits between tries (a stopping client cuts it short).

        The first try runs outside tenacity's loop, which costs about 0.1 ms a call (a tenth of a small
        call's CPU), and nearly every call succeeds at once. A first try that fails enters the loop as
        its first try (`_replayed`): the loop decides, counts, waits and reports as if it had run it."""
        run = attempt if retry_safe else _settling(attempt)
        try:
            return run()
        except Exception as error:  # the loop below decides, as it would have
            first_failure = error
        retrying = Retrying(
            sleep=sleep,
            retry=retry_if_exception(lambda error: is_retryable(error, retry_safe)),
            stop=self._stop,
            wait=self._wait,
            before_sleep=partial(_report, on_retry),
            reraise=True,
        )
        return retrying(_replayed(first_failure, run))

    def _stop(self, state: RetryCallState) -> bool:
        rate_limited = isinstance(_failure(state), RateLimitError)
        return state.attempt_number >= (self.rate_limited_max_attempts if rate_limited else self.max_attempts)

    def _wait(self, state: RetryCallState) -> float:
        if isinstance(_failure(state), RateLimitError):
            return 0.0
        return wait_random_exponential(multiplier=self.backoff_initial_s, max=self.backoff_max_s)(state)


def is_retryable(error: BaseException, retry_safe: bool) -> bool:
    """Whether a failed try may be repeated: see the module docstring."""
    if isinstance(error, RateLimitError):
        return True
    if isinstance(error, APIConnectionError):
        return retry_safe or not error.request_sent
    if isinstance(error, ResponseFormatError):
        return retry_safe and error.malformed
    return retry_safe and isinstance(error, ServerError)


def settle_write(error: ServiceError) -> ServiceError:
    """The error a failed write raises: `WriteOutcomeUnknown` when it may have been applied."""
    if isinstance(error, ResponseFormatError):
        return WriteResponseFormatError(error)
    if isinstance(error, ServerError) or (isinstance(error, APIConnectionError) and error.request_sent):
        return WriteOutcomeUnknown(error)
    return error


def _settling(attempt: Callable[[], T]) -> Callable[[], T]:
    def settled() -> T:
        try:
            return attempt()
        except ServiceError as error:
            outcome = settle_write(error)
            if outcome is error:
                raise
            raise outcome from error

    return settled


def _replayed(failure: Exception, run: Callable[[], T]) -> Callable[[], T]:
    """``run`` for a retry loop whose first try has already failed with ``failure``: the loop's first call
    raises it again, its later calls run."""
    pending = [failure]

    def again() -> T:
        if pending:
            raise pending.pop()
        return run()

    return again


def _failure(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None


def _report(on_retry: OnRetry, state: RetryCallState) -> None:
    error = _failure(state)
    if error is not None:
        on_retry(error, state.attempt_number, state.next_action.sleep if state.next_action else 0.0)
