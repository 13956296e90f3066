"""A failed tenant sync: whether it runs again in the same run and after how long, and its one line. The
one policy of the Dagster step (`pipelines.assets`) and of the direct runs (`pipelines.tenant_runs`); free
of Dagster.

A failure that may pass by itself (a 5xx, a lost connection, 429s, a list that kept changing while paged)
is tried again up to ``ADM_MAX_RETRIES`` times, ``ADM_RETRY_WAIT_S`` before the first retry, doubled for each
next one. Each try is a sync of its own with its own ``sync_runs`` row (its calls count too), the run's id
with ``.<retry>`` appended; it reuses the revision lists the earlier tries fetched (their journal).
"""

from __future__ import annotations

from pipelines.stopping import RunInterruptedError, RunOverBudgetError
from pipelines.sync import SyncBlockedError, SyncRefusedError, one_line
from resources.errors import APIConnectionError, PagingDriftError, RateLimitError, ServerError, TLSError

TRANSIENT = (ServerError, APIConnectionError, RateLimitError, PagingDriftError)
"""Failures that may pass by themselves ..."""
FINAL = (SyncBlockedError, SyncRefusedError, RunInterruptedError, RunOverBudgetError, TLSError)
"""... and those that will not, whatever they derive from: a blocking check, a refusal, a stop (its journal
resumes the next run) or a certificate not trusted."""


def headline(error: BaseException, recorded: str | None) -> str:
    """The failed run's one line: a final failure's own words, else the cause as its row stores it
    (``recorded``: its ``sync_runs.error``)."""
    if isinstance(error, FINAL):
        return str(error)
    return recorded or one_line(error)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` may pass by itself, so that the sync is worth trying again."""
    return isinstance(error, TRANSIENT) and not isinstance(error, FINAL)


def retry_wait_s(retry_number: int, max_retries: float, first_wait_s: float) -> float | None:
    """Seconds to wait before retry ``retry_number + 1`` of a sync that failed for a passing reason on try
    ``retry_number`` (0: the first), or None when no retry is left."""
    if retry_number >= max_retries:
        return None
    return first_wait_s * 2.0**retry_number


def attempt_run_id(run_id: str, retry_number: int) -> str:
    """The ``sync_runs`` id of a run's try: the run's id, then ``.<retry>`` for each retry."""
    return f"{run_id}.{retry_number}" if retry_number else run_id


def retry_note(error: BaseException, wait_s: float) -> str:
    """The log line of a retry: the failure and when the next try starts."""
    return f"{type(error).__name__}: {error}; the step runs again in {wait_s:g} s"
