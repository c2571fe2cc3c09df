"""Named scenarios: the planner on small clusters whose right answer is known."""

from __future__ import annotations

from collections import Counter

from support.clusters import balanced, generated, with_new_brokers
from support.invariants import assert_valid, final_placement, spreads
from support.scenarios import random_cases

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, Plan, TopicPartition
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.planner import in_scope, lower_bound, plan, prepare_topic, target_brokers
from ferry.plan.racks import RackLayout


def _load(snapshot: ClusterSnapshot, result: Plan) -> Counter[int]:
    return Counter(b for reps in final_placement(snapshot, result).values() for b in reps)


def _checked(snapshot: ClusterSnapshot, goal: Goal) -> Plan:
    result = plan(snapshot, goal)
    assert_valid(snapshot, goal, result)
    assert result.figures.replica_moves == result.figures.lower_bound
    assert all(v <= 1 for v in spreads(snapshot, goal, result).values())
    return result


def test_add_two_brokers_to_six_moves_only_their_share() -> None:
    before = balanced(brokers=6, racks=2, topics=4, partitions=12, rf=2)
    snapshot = with_new_brokers(before, 2, racks=2)
    result = _checked(snapshot, Goal())
    load = _load(snapshot, result)
    # 96 replicas over 8 brokers: 12 each, and the new brokers got exactly their share.
    assert load[6] == load[7] == 12
    assert result.replica_moves == 24


def test_decommission_two_of_ten_empties_them() -> None:
    snapshot = balanced(brokers=10, racks=2, topics=5, partitions=20, rf=3)
    goal = Goal(brokers=frozenset(range(8)))
    result = _checked(snapshot, goal)
    load = _load(snapshot, result)
    assert load[8] == load[9] == 0
    on_removed = sum(1 for p in snapshot.partitions for b in p.replicas if b >= 8)
    assert result.replica_moves == on_removed


def test_replace_moves_exactly_the_old_brokers_replicas_to_the_new_one() -> None:
    snapshot = with_new_brokers(balanced(brokers=6, racks=3, topics=3, partitions=10, rf=3), 1, racks=3)
    # broker 6 is in rack r0 like broker 3
    result = plan(snapshot, Goal(replace=((3, 6),)))
    assert_valid(snapshot, Goal(replace=((3, 6),)), result)
    on_old = [p for p in snapshot.partitions if 3 in p.replicas]
    assert result.replica_moves == len(on_old) == result.figures.lower_bound
    for move in result:
        assert move.removing == (3,) and move.adding == (6,)
        assert move.target.index(6) == move.original.index(3)


def test_skewed_rebalance_reaches_even_loads_with_the_fewest_moves() -> None:
    snapshot = generated(brokers=9, racks=3, topics=6, partitions=30, rf=3, seed=3, skew=2.0)
    result = _checked(snapshot, Goal())
    assert result.figures.before["replica_spread"] > 10
    assert result.figures.after["replica_spread"] <= 1


def test_replication_factor_two_to_three_adds_one_replica_per_partition() -> None:
    snapshot = balanced(brokers=6, racks=3, topics=2, partitions=12, rf=2)
    goal = Goal(replication_factors={"topic-000": 3})
    result = _checked(snapshot, goal)
    placement = final_placement(snapshot, result)
    for p in snapshot.partitions:
        if p.tp.topic == "topic-000":
            assert len(placement[p.tp]) == 3 and set(p.replicas) <= set(placement[p.tp])


def test_replication_factor_three_to_two_only_drops_replicas() -> None:
    snapshot = balanced(brokers=6, racks=3, topics=2, partitions=12, rf=3)
    goal = Goal(replication_factors={"topic-001": 2})
    result = _checked(snapshot, goal)
    assert result.replica_moves == 0
    placement = final_placement(snapshot, result)
    for p in snapshot.partitions:
        if p.tp.topic == "topic-001":
            assert set(placement[p.tp]) < set(p.replicas)


def test_no_racks_still_spreads_replicas_over_brokers() -> None:
    snapshot = with_new_brokers(balanced(brokers=5, racks=0, topics=3, partitions=10, rf=3), 1, racks=0)
    result = _checked(snapshot, Goal())
    assert _load(snapshot, result)[5] == 15


def test_the_smaller_replica_moves_when_either_would_do() -> None:
    snapshot = generated(brokers=2, racks=0, topics=1, partitions=3, rf=1, seed=1, occupied=1)
    result = plan(snapshot, Goal())
    moved = [m for m in result if m.adding]
    smallest = min(p.size for p in snapshot.partitions)
    assert len(moved) == 1 and moved[0].size_bytes == smallest


def test_topics_outside_the_scope_never_move() -> None:
    snapshot = with_new_brokers(balanced(brokers=4, racks=2, topics=3, partitions=8, rf=2), 2, racks=2)
    goal = Goal(topics=frozenset({"topic-001"}))
    result = _checked(snapshot, goal)
    assert {m.tp.topic for m in result} == {"topic-001"}


def _snap(racks: list[str | None], parts: dict[str, list[tuple[int, ...]]]) -> ClusterSnapshot:
    from ferry.model import Broker, PartitionState, TopicPartition

    states = [
        PartitionState(TopicPartition(t, i), reps, reps[0], reps, 100 * (i + 1))
        for t, rows in parts.items()
        for i, reps in enumerate(rows)
    ]
    return ClusterSnapshot.of([Broker(i, r) for i, r in enumerate(racks)], states)


def test_leaders_stay_balanceable_after_placement() -> None:
    snapshot = _snap([None] * 4, {"t0": [(1,), (0,)], "t1": [(1, 0), (0, 1)]})
    result = plan(snapshot, Goal())
    assert result.figures.replica_moves == result.figures.lower_bound == 2
    assert spreads(snapshot, Goal(), result)["leader"] <= 1


def test_two_racks_competing_for_one_slot_need_no_fallback() -> None:
    racks = [
        "r3",
        "r3",
        "r0",
        "r2",
        "r4",
        "r3",
        "r3",
        "r2",
        "r3",
        "r2",
        "r4",
        "r1",
        "r4",
        "r1",
        "r2",
        "r1",
        "r0",
        "r4",
        "r2",
        "r4",
        "r4",
        "r1",
    ]
    rows = [(1, 8, 12, 6), (2, 5, 13, 14), (9, 4, 0, 8), (3, 11, 1, 2), (1, 10, 0, 6), (1, 2, 0, 5)]
    snapshot = _snap(list(racks), {"t0": rows})
    result = plan(snapshot, Goal())
    assert result.figures.placement_fallbacks == 0


def test_leaders_of_single_replica_topics_and_a_shared_pair() -> None:
    # t1 must be led by 0, t4-2 by 1, and t2 keeps both replicas on {0, 1}: three partitions, two
    # leaders. Moving t2's replica instead of t3's costs no extra move (only more bytes).
    from ferry.model import Broker, PartitionState, TopicPartition

    rows = [
        ("t0", 0, (1,), 0),
        ("t1", 0, (0,), 536_111),
        ("t2", 0, (1, 0), 3_900_315_156),
        ("t3", 0, (0, 1), 99_438),
        ("t4", 0, (0,), 77_325),
        ("t4", 1, (1,), 6_159_721_123),
        ("t4", 2, (1,), 6_343_708_679),
    ]
    states = [PartitionState(TopicPartition(t, i), r, r[0], r, size) for t, i, r, size in rows]
    snapshot = ClusterSnapshot.of([Broker(i, None) for i in range(7)], states)
    result = plan(snapshot, Goal())
    assert result.figures.replica_moves == result.figures.lower_bound
    assert spreads(snapshot, Goal(), result)["leader"] <= 1


def test_leader_balance_that_needs_the_extras_elsewhere() -> None:
    # 10 brokers, 10 partitions: t0 pins leaders to 0, 3, 4 and 5, so t1-1 (4, 1) and t1-4 (5, 1)
    # both need broker 1. The balance program's bound is 4 moves, but every balanced plan with 4
    # moves keeps t0 in place and t1-1 and t1-4 as they are (t1's two extras must go to brokers 1
    # and 2, the only ones without t0 that hold t1 replicas): broker 1 then leads both. Enumerating
    # all 432 balanced 4-move plans confirms none spreads leaders evenly. The exact solve
    # (ferry.plan.balance.repair.whole_plan) finds the 5-move optimum, and that optimum is the plan's lower
    # bound.
    rows = [
        ("t0", 0, (3,), 449_723),
        ("t0", 1, (4,), 0),
        ("t0", 2, (0,), 0),
        ("t0", 3, (5,), 0),
        ("t1", 0, (2, 0), 372_331),
        ("t1", 1, (4, 1), 7_240_719_967),
        ("t1", 2, (2, 3), 901_827),
        ("t1", 3, (3, 0), 0),
        ("t1", 4, (5, 1), 5_326_542_330),
        ("t1", 5, (3, 2), 0),
    ]
    states = [PartitionState(TopicPartition(t, i), r, r[0], r, size) for t, i, r, size in rows]
    snapshot = ClusterSnapshot.of([Broker(i, None) for i in range(10)], states)
    result = plan(snapshot, Goal())
    assert _program_bound(snapshot, Goal()) == 4
    assert result.figures.replica_moves == result.figures.lower_bound == 5
    assert_valid(snapshot, Goal(), result)
    assert all(v <= 1 for v in spreads(snapshot, Goal(), result).values())


def test_generated_rack_case_meets_its_bound() -> None:
    # The balance program's rack-room rows are a relaxation: its bound here is 88, but no plan
    # meeting the rack rule and the quotas moves fewer than 90 (placement alone paid 90, or met 88
    # only with 2 replicas above quota). The exact solve plans those 90, and they are the bound.
    _, snapshot, goal = random_cases(4)[3]
    result = plan(snapshot, goal)
    assert _program_bound(snapshot, goal) == 88
    assert result.figures.placement_fallbacks == 0
    assert result.figures.replica_moves == result.figures.lower_bound == 90
    assert_valid(snapshot, goal, result)
    assert spreads(snapshot, goal, result)["leader"] <= 1


def _program_bound(snapshot: ClusterSnapshot, goal: Goal) -> int:
    """The balance program's lower bound alone, before the planner checks what it can realise."""
    targets = target_brokers(snapshot, goal)
    layout = RackLayout.of(snapshot.racks, targets)
    demands = [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]
    return lower_bound(demands, assign_extras(layout, demands))
