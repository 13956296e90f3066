"""The shared rate limiter: no 429 under the right plan, Retry-After obeyed under a wrong one, and the
bucket's arithmetic on a fake clock."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from models.queries import DecisionQuery
from resources.client import AdmClient
from resources.ratelimit import (
    JITTER_ALLOWANCE_S,
    RECOVERY_STEP,
    REPEAT_WINDOW_S,
    SAFETY_RATE_FACTOR,
    TokenBucket,
    shared_bucket,
)
from tests.conftest import set_faults, shared_http
from tests.test_client_support import make_client, make_settings


def statuses(server: EmulatorServer) -> dict[str, int]:
    response = shared_http().get(f"{server.base_url}/_admin/stats")
    response.raise_for_status()
    counts: dict[str, int] = response.json()["statuses"]
    return counts


def test_the_matching_plan_trips_no_429(server: EmulatorServer) -> None:
    set_faults(server, FaultConfig(rate_limit_per_minute=600, rate_burst=10, jitter_ms=5))
    with make_client(server, rate_per_minute=600, burst=10) as client:
        decisions = list(client.iter_decisions(DecisionQuery(limit=25)))
        metrics = client.metrics
    assert len(decisions) == 1000
    assert metrics.calls == {"E8": 41}  # 40 full pages, then the empty one that proves the end
    assert metrics.rate_limited == 0
    assert "429" not in statuses(server)
    assert metrics.limiter_wait_s > 0


def test_a_wrong_plan_obeys_retry_after_and_completes(server: EmulatorServer) -> None:
    set_faults(server, FaultConfig(rate_limit_per_minute=600, rate_burst=5))
    started = time.monotonic()
    with make_client(server, rate_per_minute=6000) as client:
        decisions = list(client.iter_decisions(DecisionQuery(limit=50)))
        metrics = client.metrics
    assert len({decision.id for decision in decisions}) == 1000
    assert metrics.rate_limited >= 1
    assert statuses(server)["429"] == metrics.rate_limited
    assert metrics.calls["E8"] == 21 + metrics.rate_limited  # 20 full pages and the empty 21st
    # Retry-After is whole seconds (at least 1): a client that obeyed it cannot have finished sooner.
    assert time.monotonic() - started >= 1.0


def test_clients_of_one_tenant_share_one_budget(server: EmulatorServer) -> None:
    # One request a second, a bucket of one: the first client's call empties it, and the second client
    # waits for the refill, however slowly this machine runs the calls.
    plan = {"rate_per_minute": 60, "burst": 2}
    with make_client(server, **plan) as first, AdmClient(make_settings(server, **plan)) as second:
        for _ in range(2 - math.ceil(1 * JITTER_ALLOWANCE_S)):
            first.current_user_positions()
        second.current_user_positions()
        assert first.metrics.limiter_wait_s < 0.25  # no wait: only a busy machine's scheduling
        assert second.metrics.limiter_wait_s > 0.5


def test_the_limiter_wait_is_wall_time_not_a_sum_over_workers(server: EmulatorServer) -> None:
    """Eight workers blocked on the limiter in the same second wait one second, not eight: the figure the
    progress line shows can never exceed the time the requests took."""
    with make_client(server, rate_per_minute=240, burst=1, concurrency=8) as client:
        started = time.monotonic()
        with ThreadPoolExecutor(8) as workers:
            list(workers.map(lambda _: client.current_user_positions(), range(8)))
        elapsed = time.monotonic() - started
        metrics = client.metrics
    assert metrics.calls == {"E9": 8}
    # The eighth request waits about 7 / 4 s; the eight waits together add up to about 7 s.
    assert 1.0 < metrics.limiter_wait_s <= elapsed


def test_no_request_waits_for_a_pooled_connection(server: EmulatorServer) -> None:
    """The pool holds as many connections as the client lets requests be in flight (``concurrency``), and
    a request gives its connection back before its slot: twelve callers of a client of two, each request
    100 ms at the service, never wait for a connection. A pool wait cannot happen, so it is no run event;
    had one lasted over the pool timeout (1 ms here), the request would have failed and been retried."""
    set_faults(server, FaultConfig(latency_ms=100))
    with make_client(server, concurrency=2, pool_timeout_s=0.001) as client:
        started = time.monotonic()
        with ThreadPoolExecutor(12) as callers:
            list(callers.map(lambda _: client.current_user_positions(), range(12)))
        elapsed = time.monotonic() - started
        metrics = client.metrics
    assert metrics.calls == {"E9": 12} and metrics.retries == 0
    assert elapsed >= 0.6  # two at a time: the concurrency slots, not the pool, made the callers wait


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def bucket(rate_per_minute: float, burst: float) -> tuple[TokenBucket, FakeClock]:
    clock = FakeClock()
    return TokenBucket(rate_per_minute, burst, clock=clock, sleep=clock.sleep), clock


def test_the_bucket_keeps_a_safety_margin_below_the_services() -> None:
    limiter, clock = bucket(rate_per_minute=600, burst=20)
    margin = math.ceil(10 * JITTER_ALLOWANCE_S)
    assert limiter.capacity == 20 - margin
    for _ in range(20 - margin):
        assert limiter.acquire() == 0
    assert limiter.acquire() == pytest.approx(1 / (10 * SAFETY_RATE_FACTOR))
    assert limiter.waited_s == pytest.approx(sum(clock.slept))


def test_a_lone_429_costs_its_pause_and_nothing_else() -> None:
    limiter, clock = bucket(rate_per_minute=600, burst=20)
    for _ in range(5):
        limiter.acquire()
    sent = clock.now
    limiter.rate_limited(retry_after_s=2, sent_at=sent)
    # The other requests in flight when it came are refused too: the same refusal, not a repeat.
    limiter.rate_limited(retry_after_s=2, sent_at=sent)
    started = clock.now
    limiter.acquire()
    assert clock.now - started == pytest.approx(2.0)
    assert limiter.rate_per_minute == pytest.approx(600 * SAFETY_RATE_FACTOR)
    # The tokens left before the 429 are still there: the next requests go at once.
    waits = [limiter.acquire() for _ in range(int(limiter.capacity) - 6)]
    assert waits == [0.0] * len(waits)


def test_a_429_that_repeats_after_an_honoured_pause_slows_down() -> None:
    limiter, clock = bucket(rate_per_minute=600, burst=20)
    limiter.rate_limited(retry_after_s=1, sent_at=clock.now)
    limiter.acquire()  # waits out the pause
    limiter.rate_limited(retry_after_s=1, sent_at=clock.now)
    assert limiter.rate_per_minute == pytest.approx(600 * SAFETY_RATE_FACTOR / 2)


def test_a_429_long_after_the_last_pause_is_lone_again() -> None:
    limiter, clock = bucket(rate_per_minute=600, burst=20)
    limiter.rate_limited(retry_after_s=1, sent_at=clock.now)
    clock.sleep(REPEAT_WINDOW_S + 2)
    limiter.rate_limited(retry_after_s=1, sent_at=clock.now)
    assert limiter.rate_per_minute == pytest.approx(600 * SAFETY_RATE_FACTOR)


def test_successes_win_the_rate_back_up_to_the_plan_and_no_further() -> None:
    limiter, clock = bucket(rate_per_minute=600, burst=20)
    limiter.rate_limited(retry_after_s=None, sent_at=clock.now)
    limiter.acquire()
    limiter.rate_limited(retry_after_s=None, sent_at=clock.now)
    halved = limiter.rate_per_minute
    limiter.succeeded()
    assert limiter.rate_per_minute == pytest.approx(halved + 600 * SAFETY_RATE_FACTOR * RECOVERY_STEP)
    for _ in range(200):
        limiter.succeeded()
    assert limiter.rate_per_minute == pytest.approx(600 * SAFETY_RATE_FACTOR)


def test_a_new_plan_replans_the_shared_bucket() -> None:
    first = shared_bucket("http://plan.test", "tenant", 60, 120)
    again = shared_bucket("http://plan.test", "tenant", 300, 600)
    assert again is first
    assert first.rate_per_minute == pytest.approx(300 * SAFETY_RATE_FACTOR)


@pytest.mark.parametrize("remembered", [True, False], ids=["remembered", "forgotten"])
def test_back_to_back_runs_of_a_tenant_trip_no_429_when_the_bucket_is_remembered(
    server: EmulatorServer, tmp_path: Path, remembered: bool
) -> None:
    # Before: each process started with a full bucket while the service's was drained (3 to 6 x 429 for
    # runs queued behind the same tenant's run). Each client here is a new process's (buckets forgotten).
    # The service's burst is 60 and the client keeps 5 of it back (half a second's jitter allowance). The
    # first run (67 calls) spends the client's 55 at once and is paced for the rest, leaving the service
    # about 5 tokens. The second run (53 calls) fits in a full bucket: a new process without the memory sends
    # them all at once and meets 429s, unless nearly 5 s pass between the runs; one with the memory is paced
    # from its first call. With a burst of 20, a pause of 1 s between the runs on a busy machine refilled the
    # service enough that the control failed in CI.
    set_faults(server, FaultConfig(rate_limit_per_minute=600, rate_burst=60))
    state = {"limiter_state_dir": tmp_path / "ratelimit"} if remembered else {}
    runs = []
    for limit in (15, 19):
        with make_client(server, rate_per_minute=600, burst=60, **state) as client:
            assert len(list(client.iter_decisions(DecisionQuery(limit=limit)))) == 1000
            runs.append(client.metrics)
    assert runs[0].rate_limited == 0
    if remembered:
        assert runs[1].rate_limited == 0 and "429" not in statuses(server)
        # A full bucket would have sent every call at once; this one was nearly empty (53 calls at 10 a
        # second wait about 5 s; over 0.5 s unless the bucket refilled for more than 4.5 s between the runs).
        assert runs[1].limiter_wait_s > 0.5
    else:  # the same runs without the memory: the second one spends its burst on a drained service
        assert runs[1].rate_limited > 0


def test_a_saved_bucket_of_another_plan_or_unreadable_is_ignored(tmp_path: Path) -> None:
    state_file = tmp_path / "bucket.json"
    drained = TokenBucket(600, 20, state_file=state_file)
    while drained._take() == 0:  # take every token
        pass
    drained.save()
    assert TokenBucket(600, 20, state_file=state_file)._take() > 0  # same plan: still drained
    assert TokenBucket(1200, 20, state_file=state_file)._take() == 0  # another plan: starts full
    state_file.write_text("{not json", encoding="utf-8")
    assert TokenBucket(600, 20, state_file=state_file)._take() == 0


def test_a_failed_save_is_logged_once_and_costs_the_run_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: the OSError was swallowed without a word; the operator never learned why runs met 429s.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state folder should be", encoding="utf-8")
    bucket = TokenBucket(600, 20, state_file=blocker / "bucket.json")
    with caplog.at_level("WARNING", logger="resources.ratelimit"):
        bucket.save()
        bucket.save()
    warnings = [r.getMessage() for r in caplog.records if r.name == "resources.ratelimit"]
    assert len(warnings) == 1 and "rate-limit state not saved" in warnings[0]
    assert bucket._take() >= 0  # the bucket still works
