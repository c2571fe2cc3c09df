"""Progress maths: numerator/denominator per adding replica, roll-ups, rate and ETA."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.exec_moves import moves

from ferry.execute.progress import (
    THROTTLE_SHARE,
    History,
    Progress,
    ReplicaProgress,
    Sample,
    by_broker,
    by_partition,
    estimate,
    replica_progress,
    total,
)
from ferry.model import Move, TopicPartition

MOVE = Move(TopicPartition("t", 0), (1, 2), (3, 4), size_bytes=500)


def test_adding_replica_size_over_leader_size() -> None:
    progress = replica_progress(MOVE, {1: 1000, 2: 990, 3: 250, 4: 1200}, leader=1)
    assert [(r.broker, r.progress) for r in progress] == [(3, Progress(250, 1000)), (4, Progress(1000, 1000))]
    assert total(progress).fraction == pytest.approx(0.625)


def test_denominator_falls_back_to_largest_original_then_planned_size() -> None:
    assert replica_progress(MOVE, {1: 10, 2: 20}, leader=None)[0].progress.total == 20
    assert replica_progress(MOVE, {}, leader=1)[0].progress == Progress(0, 500)
    assert replica_progress(MOVE, {}, leader=1, finished=True)[0].progress == Progress(500, 500)


def test_nothing_to_copy_is_complete() -> None:
    assert Progress(0, 0).fraction == 1.0
    with pytest.raises(ValueError):
        Progress(5, 4)


def test_rate_and_eta_from_samples() -> None:
    samples = [Sample(t, 100 * t) for t in range(10)]
    est = estimate(samples, remaining=1000)
    assert est.rate == pytest.approx(100)
    assert est.eta_s == pytest.approx(10)
    assert estimate(samples[:1], remaining=1000).rate is None
    assert estimate([Sample(0, 5), Sample(1, 5)], remaining=10).eta_s is None
    assert estimate(samples, remaining=0).eta_s == 0.0


def test_window_ignores_old_samples() -> None:
    samples = [Sample(0, 0), Sample(100, 0), Sample(101, 50), Sample(102, 100)]
    assert estimate(samples, remaining=100, window_s=5).rate == pytest.approx(50)


def _replicas(done: dict[int, int], totals: dict[int, int]) -> list[ReplicaProgress]:
    return [ReplicaProgress(TopicPartition("t", b), b, Progress(done[b], totals[b])) for b in totals]


def test_history_eta_waits_for_the_busiest_broker() -> None:
    """Brokers 1 and 2 each copy 100 B/s; 1 has 1000 B left, 2 only 200 B.

    The request copies 200 B/s with 1200 B left (6 s by its own figures), but broker 1 needs 10 s.
    """
    totals = {1: 2000, 2: 1200}
    history = History()
    for t in range(11):
        replicas = _replicas({1: 100 * t, 2: 100 * t}, totals)
        history = history.add(float(t), replicas)
    est = history.estimate(replicas)
    assert est.rate == pytest.approx(200)
    assert est.eta_s == pytest.approx(10)


def test_history_broker_without_a_rate_counts_through_the_request_only() -> None:
    totals = {1: 1000, 2: 1000}
    history = History()
    for t in range(5):
        replicas = _replicas({1: 100 * t, 2: 0}, totals)  # 2's move waits for a slot
        history = history.add(float(t), replicas)
    est = history.estimate(replicas)
    assert est.eta_s == pytest.approx((600 + 1000) / 100)
    done = _replicas(totals, totals)
    assert history.add(5.0, done).estimate(done).eta_s == 0.0


def test_time_before_the_bytes_grew_does_not_draw_the_rate_down() -> None:
    """Broker 2's move waited 10 s for a slot, then copied 100 B/s like broker 1's."""
    totals = {1: 3000, 2: 2000}
    history = History()
    for t in range(21):
        replicas = _replicas({1: 100 * t, 2: 100 * max(0, t - 10)}, totals)
        history = history.add(float(t), replicas)
    assert history.estimate(replicas).eta_s == pytest.approx(10)  # both have 1000 B left
    assert estimate([Sample(0, 0), Sample(5, 0), Sample(6, 100), Sample(7, 200)], 1000).rate == 100


def _grown(
    history: History, per_s: dict[int, int], totals: dict[int, int], seconds: int
) -> tuple[History, list[ReplicaProgress]]:
    """``history`` with a measurement each second from 0 on, each broker copying ``per_s`` B/s."""
    replicas: list[ReplicaProgress] = []
    for t in range(seconds):
        replicas = _replicas({b: rate * t for b, rate in per_s.items()}, totals)
        history = history.add(float(t), replicas)
    return history, replicas


def test_a_broker_faster_than_its_throttle_counts_at_its_sustained_share() -> None:
    """A burst measures 300 B/s on a broker throttled at 100 B/s: the ETA holds to the throttle."""
    history, replicas = _grown(History(throttle=100), {1: 300}, {1: 3000}, seconds=4)
    est = history.estimate(replicas)
    assert est.rate == pytest.approx(300)  # the measurement is reported as it was
    assert est.eta_s == pytest.approx(2100 / (100 * THROTTLE_SHARE))
    assert history.throttle == 100  # add keeps it


def test_a_broker_slower_than_its_throttle_keeps_its_own_rate() -> None:
    history, replicas = _grown(History(throttle=1000), {1: 50}, {1: 3000}, seconds=4)
    assert history.estimate(replicas).eta_s == pytest.approx(2850 / 50)


def test_a_waiting_broker_needs_at_least_its_bytes_at_the_throttle() -> None:
    """Broker 2 waits for a slot with 20000 B to take; the request's rate alone would say 11 s."""
    totals = {1: 6000, 2: 20000}
    history, replicas = _grown(History(throttle=1000), {1: 2000, 2: 0}, totals, seconds=3)
    assert history.estimate(replicas).eta_s == pytest.approx(20000 / (1000 * THROTTLE_SHARE))
    unthrottled, replicas = _grown(History(), {1: 2000, 2: 0}, totals, seconds=3)
    assert unthrottled.estimate(replicas).eta_s == pytest.approx((2000 + 20000) / 2000)


@given(
    st.lists(st.tuples(st.floats(0.01, 10), st.integers(0, 10**5), st.integers(0, 10**5)), max_size=20),
    st.integers(1, 10**5),
)
def test_the_eta_never_promises_more_than_the_throttle(
    steps: list[tuple[float, int, int]], throttle: int
) -> None:
    totals = {1: 10**6, 2: 10**6}
    history, at, done = History(throttle=throttle), 0.0, {1: 0, 2: 0}
    for dt, more1, more2 in steps:
        at, done = at + dt, {1: done[1] + more1, 2: done[2] + more2}
        replicas = _replicas(done, totals)
        history = history.add(at, replicas)
        eta = history.estimate(replicas).eta_s
        if eta is not None:
            assert 0 <= eta < float("inf")
            assert eta >= max(totals[b] - done[b] for b in totals) / throttle * (1 - 1e-9)


def test_history_keeps_only_its_window() -> None:
    history = History(window_s=5)
    for t in range(20):
        history = history.add(float(t), _replicas({1: t}, {1: 100}))
    assert [s.at for s in history.total] == [14, 15, 16, 17, 18, 19]
    assert [s.at for s in history.brokers[1]] == [14, 15, 16, 17, 18, 19]


@given(
    st.lists(moves(), max_size=8, unique_by=lambda m: m.tp),
    st.dictionaries(st.integers(1, 6), st.integers(0, 10_000)),
)
def test_roll_ups_agree_and_stay_in_range(drawn: list[Move], sizes: dict[int, int]) -> None:
    replicas = [r for m in drawn for r in replica_progress(m, sizes, leader=m.original[0])]
    request = total(replicas)
    assert 0.0 <= request.fraction <= 1.0
    assert sum(by_partition(replicas).values(), Progress(0, 0)) == request
    assert sum(by_broker(replicas).values(), Progress(0, 0)) == request
    assert len(replicas) == sum(len(m.adding) for m in drawn)


@given(
    st.lists(st.tuples(st.floats(0.01, 10), st.integers(0, 10**6)), min_size=2, max_size=30),
    st.integers(1, 10**9),
)
def test_eta_is_never_negative(steps: list[tuple[float, int]], remaining: int) -> None:
    samples, at, done = [], 0.0, 0
    for dt, more in steps:
        at, done = at + dt, done + more
        samples.append(Sample(at, done))
    est = estimate(samples, remaining)
    assert est.rate is not None and est.rate >= -1e-6
    assert est.eta_s is None or est.eta_s >= 0
