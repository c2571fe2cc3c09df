"""Property tests: every plan over random clusters keeps the planner's promises."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.invariants import assert_valid, racks_bind, spreads

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, RackMode, TopicPartition
from ferry.plan.planner import plan


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """1-50 brokers, 0-6 racks (unequal sizes), RF 1-4, random sizes and placements."""
    n = draw(st.integers(1, 50))
    racks = draw(st.integers(0, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rnd = random.Random(seed)
    rack_of = [f"r{rnd.randrange(racks)}" if racks else None for _ in range(n)]
    # Only some brokers may hold replicas today: the others are new, empty brokers.
    occupied = draw(st.integers(1, n))
    skew = draw(st.sampled_from([0.0, 0.5, 3.0]))
    weights = [1.0 / (1 + skew * i) for i in range(occupied)]
    partitions = []
    for t in range(draw(st.integers(1, 6))):
        rf = min(draw(st.integers(1, 4)), occupied)
        for p in range(draw(st.integers(1, 24))):
            pool = list(range(occupied))
            w = list(weights)
            replicas = []
            for _ in range(rf):
                i = rnd.choices(range(len(pool)), weights=w)[0]
                replicas.append(pool.pop(i))
                w.pop(i)
            size = rnd.choice([0, rnd.randint(1, 10**6), rnd.randint(1, 10**10)])
            partitions.append(
                PartitionState(
                    TopicPartition(f"t{t}", p), tuple(replicas), replicas[0], tuple(replicas), size
                )
            )
    return ClusterSnapshot.of([Broker(i, rack_of[i]) for i in range(n)], partitions)


@st.composite
def goals(draw: st.DrawFn, snapshot: ClusterSnapshot) -> Goal:
    ids = list(snapshot.broker_ids)
    kind = draw(st.sampled_from(["rebalance", "subset", "rf", "topics"]))
    mode = draw(st.sampled_from([RackMode.STRICT, RackMode.EVEN]))
    if kind == "subset":
        keep = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
        return Goal(brokers=frozenset(keep), rack_mode=mode)
    if kind == "rf":
        topic = draw(st.sampled_from(snapshot.topics))
        rf = draw(st.integers(1, min(4, len(ids))))
        return Goal(replication_factors={topic: rf}, rack_mode=mode)
    if kind == "topics":
        chosen = draw(st.lists(st.sampled_from(snapshot.topics), min_size=1, unique=True))
        return Goal(topics=frozenset(chosen), rack_mode=mode)
    return Goal(rack_mode=mode)


def _feasible(snapshot: ClusterSnapshot, goal: Goal) -> bool:
    targets = len(goal.brokers) if goal.brokers is not None else len(snapshot.broker_ids)
    return all(
        goal.replication_factors.get(p.tp.topic, p.replication_factor) <= targets
        for p in snapshot.partitions
        if goal.in_scope(p.tp.topic)
    )


# derandomize: every run draws the same examples, so a failure here reproduces anywhere.
SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(data=st.data())
def test_every_plan_is_valid(data: st.DataObject) -> None:
    snapshot = data.draw(clusters())
    goal = data.draw(goals(snapshot))
    assume(_feasible(snapshot, goal))
    assert_valid(snapshot, goal, plan(snapshot, goal))


@SETTINGS
@given(data=st.data())
def test_every_plan_is_minimal_and_balanced(data: st.DataObject) -> None:
    snapshot = data.draw(clusters())
    goal = data.draw(goals(snapshot))
    assume(_feasible(snapshot, goal))
    result = plan(snapshot, goal)
    report = result.figures
    moves, bound = report.replica_moves, report.lower_bound
    assert moves >= bound, "the lower bound is above what the planner achieved"
    assert moves <= bound * 1.01, f"{moves} moves against a lower bound of {bound}"
    assert report.placement_fallbacks == 0
    measured = spreads(snapshot, goal, result)
    assert measured["leader"] <= 1
    if not racks_bind(snapshot, goal):
        assert measured["topic"] <= 1
        assert measured["global"] <= 1


@SETTINGS
@given(data=st.data())
def test_planning_is_deterministic(data: st.DataObject) -> None:
    snapshot = data.draw(clusters())
    goal = data.draw(goals(snapshot))
    assume(_feasible(snapshot, goal))
    assert plan(snapshot, goal).moves == plan(snapshot, goal).moves


@SETTINGS
@given(snapshot=clusters())
def test_a_plan_applied_again_moves_nothing(snapshot: ClusterSnapshot) -> None:
    first = plan(snapshot, Goal())
    placement = {p.tp: p.replicas for p in snapshot.partitions}
    placement.update(first.targets)
    again = ClusterSnapshot.of(
        snapshot.brokers,
        [
            PartitionState(p.tp, placement[p.tp], placement[p.tp][0], placement[p.tp], p.size_bytes)
            for p in snapshot.partitions
        ],
    )
    assert plan(again, Goal()).replica_moves == 0


@SETTINGS
@given(data=st.data())
def test_unequal_racks_reach_the_forced_spread_and_stay_even_inside_each_rack(data: st.DataObject) -> None:
    snapshot = data.draw(clusters())
    goal = data.draw(goals(snapshot))
    assume(_feasible(snapshot, goal) and goal.rack_mode is RackMode.STRICT)
    report = plan(snapshot, goal).figures
    after = report.after
    # The forced spread is what the rack rule leaves; a plan may miss it by one at most.
    assert after["replica_spread"] <= report.forced_replica_spread + 1
    assert after["rack_replica_spread_max"] <= 1
    assert after["topic_rack_spread_max"] <= 1
    assert after["leader_spread"] <= 1
    assert after["rack_violations"] == 0
