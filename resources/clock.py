"""The service's own clock, as its answers state it: what an instant in a record is judged against.

Every answer tells the time twice: the envelope's ``timestamp`` and the HTTP ``Date`` header (RFC 9110
6.6.1). An answer's time is the earlier of the two it carries (one wrong stamp cannot move it forward), and
the clock is the latest answer's time: a record on a page cannot have been updated after the service
served that page. A record stamped later than the clock plus `CLOCK_MARGIN` is stamped in the future (a
wrong clock on the service's side, a typo in 2099): it is loaded, but its stamp moves no cursor, because a
cursor in the future makes every later incremental read miss every change (docs/sync.md, "Cursors").
"""

from __future__ import annotations

import functools
import re
import threading
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx

CLOCK_MARGIN = timedelta(minutes=2)
"""How far past the service's clock a record's stamp may be and still count as the present: the clocks of
the service's own machines differ a little. Kept below the incremental overlap (10 minutes), so a cursor
moved up to this margin ahead still starts the next read before the service's present."""


class ServiceClock:
    """The latest time the service's answers stated; thread-safe."""

    def __init__(self) -> None:
        self._now: datetime | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime | None:
        """The latest time an answer stated (None before the first answer that says)."""
        with self._lock:
            return self._now

    def observe(self, response: httpx.Response, envelope_time: datetime | None) -> None:
        """Note the time one answer states: its envelope's timestamp and its ``Date`` header."""
        stated = [stamp for stamp in (envelope_time, _date_header(response)) if stamp is not None]
        if not stated:
            return
        answer = min(stated)
        with self._lock:
            if self._now is None or answer > self._now:
                self._now = answer

    def ahead(self, instant: datetime) -> bool:
        """Whether ``instant`` is later than the service's clock plus `CLOCK_MARGIN` (False before the
        clock is known: nothing to judge by)."""
        now = self.now()
        return now is not None and instant > now + CLOCK_MARGIN


def _date_header(response: httpx.Response) -> datetime | None:
    """The answer's ``Date`` header as an aware instant, or None when missing or unreadable."""
    value = response.headers.get("Date")
    return None if value is None else _instant(value)


@functools.lru_cache(maxsize=64)  # a Date names a second: the answers of one second share it (19 µs a parse)
def _instant(value: str) -> datetime | None:
    """An HTTP-date as an aware instant, or None when it is none. RFC 9110 (5.6.7) has recipients accept
    three forms, all in UTC: the IMF-fixdate, and the obsolete RFC 850 and asctime forms; the last names no
    zone, which the standard library's parser then leaves out."""
    try:
        stamp = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if stamp.tzinfo is not None:
        return stamp
    return stamp.replace(tzinfo=UTC) if _ASCTIME.fullmatch(value) else None


_ASCTIME = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}")
"""RFC 9110's asctime-date: ``Sun Nov  6 08:49:37 1994``."""
