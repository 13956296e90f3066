"""How often a cron schedule fires, counted a day at a time from its fields rather than firing by firing.

croniter steps from one firing to the next at about a third of a millisecond a step: a year of the nightly
schedule cost 0.13 s at the start of every run that projects its month, and a schedule firing every minute
would have cost minutes. A schedule of plain values (numbers, ranges, steps, names, ``*``) fires on each day
its day fields select, once at each of its minutes of each of its hours. Which days, croniter's rule:
the month must match; then a day of the month or a day of the week when both fields are restricted (as cron
has it), otherwise the one that is. A schedule with a field croniter reads another way (``L`` for the last
day, ``#`` for the n-th weekday) is stepped as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import cache

from croniter import croniter

YEAR = 2025
"""Runs are counted over a year that is not a leap year, then divided by 12."""
ANY = "*"
"""croniter's expansion of an unrestricted field."""

Field = Sequence[int | str]


@cache
def runs_a_month(cron: str) -> float:
    """How many times ``cron`` (checked by the settings: five fields) fires in an average month."""
    return fires_between(cron, date(YEAR, 1, 1), date(YEAR + 1, 1, 1)) / 12


def fires_between(cron: str, first: date, end: date) -> int:
    """How many times ``cron`` fires on the days from ``first`` up to ``end`` (excluded), in UTC."""
    fields, nth_weekdays = croniter.expand(cron)
    minutes, hours, days, months, weekdays = fields
    if nth_weekdays or not all(value == ANY or isinstance(value, int) for field in fields for value in field):
        return _stepped(cron, first, end)
    a_day = _count(minutes, 60) * _count(hours, 24)
    return a_day * sum(1 for day in _days(first, end) if _fires_on(day, days, months, weekdays))


def _count(field: Field, values: int) -> int:
    return values if list(field) == [ANY] else len(field)


def _days(first: date, end: date) -> Iterator[date]:
    for offset in range((end - first).days):
        yield first + timedelta(days=offset)


def _fires_on(day: date, days: Field, months: Field, weekdays: Field) -> bool:
    """Whether the day fields select ``day`` (croniter's rule, in the module docstring)."""
    if list(months) != [ANY] and day.month not in months:
        return False
    any_day, any_weekday = list(days) == [ANY], list(weekdays) == [ANY]
    in_month = any_day or day.day in days
    in_week = any_weekday or (day.weekday() + 1) % 7 in weekdays  # cron counts from Sunday, 0
    if not any_day and not any_weekday:
        return in_month or in_week
    return in_month and in_week


def _stepped(cron: str, first: date, end: date) -> int:
    """The firings croniter steps through, one by one."""
    start = datetime.combine(first, time(), UTC)
    stop = datetime.combine(end, time(), UTC)
    times = croniter(cron, start - timedelta(seconds=1))
    fired = 0
    while times.get_next(datetime) < stop:
        fired += 1
    return fired
