"""How often a schedule fires (`pipelines.schedule_runs`): counted from its fields, as croniter steps it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from croniter import CroniterBadDateError, croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.schedule_runs import fires_between, runs_a_month


@pytest.mark.parametrize(
    ("cron", "runs"),
    [
        ("0 2 * * *", 365 / 12),
        ("0 3 * * 0", 52 / 12),
        ("*/30 9-16 * * 1-5", 16 * 261 / 12),
        # Day of month and day of week both restricted: either fires, as cron says (12 firsts, 52 Mondays,
        # 2 of them both).
        ("0 0 1 * 1", (12 + 52 - 2) / 12),
        ("0 2 31 2 *", 0),  # no such day: never (croniter gives up stepping after years)
        ("0 2 L * *", 1),  # the last day of each month: stepped
        ("0 2 * * 5#2", 1),  # the second Friday: stepped
    ],
)
def test_runs_a_month_follow_the_schedule(cron: str, runs: float) -> None:
    assert runs_a_month(cron) == pytest.approx(runs)


def values(low: int, high: int, names: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """One field of plain values from ``low`` to ``high`` as cron writes them: a list, a range, a step or
    ``*``; ``names`` spell the values from ``low`` in words."""
    number = st.integers(low, high)
    word = st.sampled_from(names) if names else number.map(str)
    single = st.one_of(number.map(str), word)
    ranged = st.tuples(number, number).map(lambda pair: f"{min(pair)}-{max(pair)}")
    stepped = st.tuples(st.sampled_from(["*", f"{low}-{high}"]), st.integers(2, high - low + 1)).map(
        lambda pair: f"{pair[0]}/{pair[1]}"
    )
    listed = st.lists(st.one_of(single, ranged), min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), listed, stepped)


DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
SCHEDULES = st.tuples(
    st.lists(st.integers(0, 59), min_size=1, max_size=2, unique=True).map(lambda ms: ",".join(map(str, ms))),
    st.one_of(
        st.just("*"),
        st.lists(st.integers(0, 23), min_size=1, max_size=3).map(lambda hs: ",".join(map(str, hs))),
    ),
    values(1, 31),
    values(1, 12, MONTHS),
    values(0, 7, DAYS),
).map(" ".join)
"""Five-field schedules of plain values; a few minutes an hour, so that stepping stays quick."""


def stepped(cron: str, first: date, days: int) -> int:
    """croniter's own count: every firing from ``first`` for ``days`` days."""
    stop = datetime.combine(first + timedelta(days=days), time(), UTC)
    times = croniter(cron, datetime.combine(first, time(), UTC) - timedelta(seconds=1))
    fired = 0
    try:
        while times.get_next(datetime) < stop:
            fired += 1
    except CroniterBadDateError:  # no later firing within the years croniter looks ahead
        pass
    return fired


@settings(max_examples=40, deadline=None)
@given(SCHEDULES, st.dates(date(2023, 1, 1), date(2028, 12, 31)), st.integers(1, 12))
def test_a_schedule_of_plain_values_fires_as_often_as_croniter_steps_it(
    cron: str, first: date, days: int
) -> None:
    assert croniter.is_valid(cron)
    assert fires_between(cron, first, first + timedelta(days=days)) == stepped(cron, first, days)
