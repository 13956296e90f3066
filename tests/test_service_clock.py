"""The service's clock from its answers' own evidence: each answer's envelope timestamp and its HTTP ``Date``
header, in any of the three forms RFC 9110 (5.6.7) has a recipient accept, or none at all."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from hypothesis import given
from hypothesis import strategies as st

from resources.clock import ServiceClock

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
FORMS = ("IMF-fixdate", "rfc850-date", "asctime-date")
NOT_DATES = (
    "",
    "soon",
    "2026-11-29T13:04:21Z",
    "Sun, 29 Nov 2026 13:04:21 -0000",
    "Sun, 31 Feb 2026 25:00:00 GMT",
)
"""Values no HTTP-date form allows: empty, a word, ISO 8601, an unknown offset, an impossible day and hour."""


def http_date(instant: datetime, form: str) -> str:
    """``instant`` (UTC, whole seconds) written in one of RFC 9110's forms, from English names (no locale)."""
    day, month, time = DAYS[instant.weekday()], MONTHS[instant.month - 1], f"{instant:%H:%M:%S}"
    if form == "IMF-fixdate":
        return f"{day}, {instant.day:02d} {month} {instant.year} {time} GMT"
    if form == "rfc850-date":
        return f"{WEEKDAYS[instant.weekday()]}, {instant.day:02d}-{month}-{instant.year % 100:02d} {time} GMT"
    return f"{day} {month} {instant.day:2d} {time} {instant.year}"


# RFC 850's two-digit years read as 1977-2068 by both RFC 9110's rule (no more than 50 years ahead of 2026)
# and the standard library's (69-99 are 19xx); the service's Date is its present, far inside that span.
instants = st.datetimes(min_value=datetime(1977, 1, 1), max_value=datetime(2068, 12, 31)).map(
    lambda moment: moment.replace(microsecond=0, tzinfo=UTC)
)


Answer = tuple[datetime | None, str | None, datetime | None]
"""An answer's envelope timestamp, its ``Date`` header, and the instant that header names."""


@st.composite
def answers(draw: st.DrawFn) -> list[Answer]:
    """Answers with few distinct instants, so that answers share a Date as answers of one second do."""
    pool = draw(st.lists(instants, min_size=1, max_size=4))
    drawn: list[Answer] = []
    for _ in range(draw(st.integers(1, 8))):
        envelope = draw(st.none() | st.sampled_from(pool))
        kind = draw(st.sampled_from(("none", "date", "not a date")))
        if kind == "date":
            named = draw(st.sampled_from(pool))
            drawn.append((envelope, http_date(named, draw(st.sampled_from(FORMS))), named))
        else:
            drawn.append((envelope, draw(st.sampled_from(NOT_DATES)) if kind == "not a date" else None, None))
    return drawn


@given(answers())
def test_the_clock_is_the_latest_answer_each_at_the_earlier_of_its_two_stamps(drawn: list[Answer]) -> None:
    clock = ServiceClock()
    for envelope, date, _ in drawn:
        clock.observe(httpx.Response(200, headers={} if date is None else {"Date": date}), envelope)

    stated = [min(found) for envelope, _, named in drawn if (found := [t for t in (envelope, named) if t])]
    assert clock.now() == (max(stated) if stated else None)
