"""A drain above a threshold: only the brokers over it send, each ends at or under it, the bytes moved
stay close to what must leave them, the rack rule holds, and an impossible drain is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot
from support.clusters import generated
from support.invariants import bytes_per_broker

from ferry.errors import PreconditionError
from ferry.model import ClusterSnapshot, Goal
from ferry.plan.planner import plan
from ferry.plan.racks import RackLayout


def capacities(cluster: ClusterSnapshot, fullest: float) -> dict[int, int]:
    """One capacity for every broker, the fullest broker at ``fullest`` of it."""
    top = max(bytes_per_broker(cluster).values())
    return dict.fromkeys(cluster.broker_ids, int(top / fullest))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 10_000),
    st.integers(6, 12),
    st.sampled_from([0, 2, 3]),
    st.floats(0.5, 2.0),
    st.floats(0.6, 0.9),
)
def test_only_brokers_over_the_threshold_send_and_each_ends_under_it(
    seed: int, brokers: int, racks: int, skew: float, threshold: float
) -> None:
    cluster = generated(brokers=brokers, racks=racks, topics=4, partitions=12, rf=2, seed=seed, skew=skew)
    capacity = capacities(cluster, 0.95)
    goal = Goal(capacity=capacity, drain_above=threshold)
    try:
        done = plan(cluster, goal)
    except PreconditionError as refused:
        assert f"--drain-above {threshold:g}" in str(refused)
        return
    before = bytes_per_broker(cluster)
    placement = {m.tp: m.target for m in done.moves}
    after = bytes_per_broker(cluster, placement)
    senders = {b for b in cluster.broker_ids if before[b] > threshold * capacity[b]}
    for move in done.moves:
        assert set(move.removing) <= senders  # nobody else sends
        assert not set(move.adding) & senders  # and senders take nothing
    for b in cluster.broker_ids:
        assert after[b] <= threshold * capacity[b] + 1e-6 or (b not in senders and after[b] == before[b])
    assert done.report is not None and done.report.drain is not None
    must_leave = sum(before[b] - threshold * capacity[b] for b in senders)
    assert done.report.drain["bytes_to_leave"] == int(must_leave)
    layout = RackLayout.of(cluster.racks, cluster.broker_ids)
    for move in done.moves:
        assert layout.violations(move.target) <= layout.violations(move.original)


def test_the_bytes_moved_stay_within_fifteen_percent_of_what_must_leave() -> None:
    cluster = generated(brokers=12, racks=3, topics=20, partitions=30, rf=3, seed=5, skew=1.5)
    for threshold in (0.85, 0.75, 0.65):
        done = plan(cluster, Goal(capacity=capacities(cluster, 0.95), drain_above=threshold))
        assert done.report is not None and done.report.drain is not None
        ratio = done.report.drain["bytes_moved_over_bound"]
        assert ratio is not None and 1.0 <= ratio <= 1.15, threshold


def test_the_largest_replicas_that_fit_go_first_then_the_smallest_that_covers_the_rest() -> None:
    # Broker 1 holds 60 + 30 + 25 + 8 bytes of 100 and must shed 23 to reach 100: the 8 fits
    # under what is left, then 25 is the smallest that covers the other 15.
    sizes = {0: 60, 1: 30, 2: 25, 3: 8}
    parts = [partition("t", p, [1], size=n) for p, n in sizes.items()]
    cluster = snapshot([broker(1), broker(2), broker(3)], parts)
    done = plan(cluster, Goal(capacity={1: 123, 2: 1000, 3: 1000}, drain_above=100 / 123))
    moved = sorted(sizes[m.tp.partition] for m in done.moves)
    assert moved == [8, 25]


def test_a_new_replica_goes_to_the_broker_with_the_most_room_that_the_rack_rule_allows() -> None:
    # Broker 1 (rack a) must send partition t-0, whose other replica is on 3 (rack b): rack b's
    # broker 4 has the most room but would put two replicas in rack b; broker 2 (rack a) takes it.
    cluster = snapshot(
        [broker(1, "a"), broker(2, "a"), broker(3, "b"), broker(4, "b")],
        [partition("t", 0, [1, 3], size=50), partition("u", 0, [2, 3], size=30)],
    )
    done = plan(cluster, Goal(capacity={1: 60, 2: 200, 3: 1000, 4: 1000}, drain_above=0.5))
    (move,) = done.moves
    assert move.target == (2, 3)  # and the preferred leader's place went to the new replica


def test_a_drain_no_broker_can_take_is_refused_naming_who_stays_over_and_by_how_much() -> None:
    cluster = snapshot(
        [broker(1), broker(2)], [partition("t", 0, [1], size=90), partition("t", 1, [2], size=80)]
    )
    with pytest.raises(PreconditionError) as refused:
        plan(cluster, Goal(capacity={1: 100, 2: 100}, drain_above=0.5))
    message = str(refused.value)
    assert message.startswith("--drain-above 0.5: no plan gets every broker under 50 % of its capacity: ")
    assert "broker 1 stays 0.0 GB over (and 1 more)" in message
    assert refused.value.exit_code == 4


def test_a_budgeted_drain_is_a_step_of_the_drain_with_its_own_fractions() -> None:
    cluster = generated(brokers=12, racks=3, topics=20, partitions=30, rf=3, seed=5, skew=1.5)
    goal = Goal(capacity=capacities(cluster, 0.95), drain_above=0.7)
    whole = plan(cluster, goal)
    assert whole.report is not None and whole.report.drain is not None
    step = plan(cluster, replace(goal, max_moves=5))
    assert step.report is not None and step.report.drain is not None and step.report.budget is not None
    assert step.report.replica_moves == 5
    senders = set(whole.report.drain["senders"])
    assert all(set(m.removing) <= senders for m in step.moves)  # a step of the drain: only senders send
    placement = {m.tp: m.target for m in step.moves}
    after = bytes_per_broker(cluster, placement)
    capacity = goal.capacity or {}
    assert step.report.drain["after"] == {
        str(b): round(after[b] / capacity[b], 4) for b in cluster.broker_ids
    }
    assert step.report.drain["bytes_moved_over_bound"] == whole.report.drain["bytes_moved_over_bound"]
