"""A budgeted plan is a step of the full plan: within the budget, every replica where the full plan
puts it, the rack rule kept, and steps run one after another add up to the full plan."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from support.clusters import balanced, generated, unequal_racks, with_new_brokers
from support.invariants import applied

from ferry.model import BalanceMode, Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.planner import plan
from ferry.plan.racks import RackLayout


def rack_clean_skewed(brokers: int, racks: int, topics: int, partitions: int, seed: int) -> ClusterSnapshot:
    """One replica per rack (RF = racks), low broker ids likelier in each rack: unbalanced, rack-clean."""
    rnd = random.Random(seed)
    nodes = [Broker(i, f"r{i % racks}") for i in range(brokers)]
    members = [[b for b in range(brokers) if b % racks == k] for k in range(racks)]
    states = []
    for t in range(topics):
        for p in range(partitions):
            picks = [rnd.choices(m, weights=[1 / (1 + 2 * j) for j in range(len(m))])[0] for m in members]
            rnd.shuffle(picks)
            tp = TopicPartition(f"t{t}", p)
            states.append(
                PartitionState(tp, tuple(picks), picks[0], tuple(picks), 100 * (1 + rnd.randrange(50)))
            )
    return ClusterSnapshot.of(nodes, states)


SHAPES = {
    "even racks, brokers added": (with_new_brokers(balanced(9, 3, 8, 12, 3), 3, 3), Goal()),
    "skewed start": (rack_clean_skewed(12, 3, 6, 20, seed=2), Goal()),
    "unequal racks": (unequal_racks((4, 3, 2), [(20, 3), (15, 2), (10, 1)], seed=5), Goal()),
    "remove two brokers": (generated(brokers=10, racks=3, topics=6, partitions=15, rf=3, seed=3), None),
    "replication factor 2 to 3": (generated(brokers=9, racks=3, topics=4, partitions=12, rf=2, seed=7), None),
    "bytes": (generated(brokers=9, racks=3, topics=6, partitions=15, rf=3, seed=1, occupied=6), None),
}


def _goal(name: str, snapshot: ClusterSnapshot, goal: Goal | None) -> Goal:
    if goal is not None:
        return goal
    if name == "remove two brokers":
        return Goal(brokers=frozenset(snapshot.broker_ids) - {0, 1})
    if name == "bytes":
        return Goal(balance=BalanceMode.BYTES)
    return Goal(replication_factors=dict.fromkeys(snapshot.topics, 3))


@pytest.mark.parametrize("name", list(SHAPES))
@pytest.mark.parametrize("budget", [1, 7, 25])
def test_steps_at_a_budget_add_up_to_the_full_plan_and_end_as_balanced(name: str, budget: int) -> None:
    snapshot, goal = SHAPES[name][0], _goal(name, *SHAPES[name])
    full = plan(snapshot, goal)
    assert full.report is not None and full.report.replica_moves > budget
    # The byte balance moves the fewest bytes, not replicas: its steps add up in bytes.
    measure = "bytes_moved" if goal.balance is BalanceMode.BYTES else "replica_moves"
    current, total, steps = snapshot, 0, 0
    while True:
        step = plan(current, replace(goal, max_moves=budget))
        assert step.report is not None and step.report.budget is not None
        if not step.moves:
            break
        assert step.report.replica_moves <= budget
        total += getattr(step.report, measure)
        current, steps = applied(current, step), steps + 1
        assert steps <= 2 * full.report.replica_moves
    assert total <= 1.02 * getattr(full.report, measure)
    again = plan(current, goal)
    assert again.report is not None and again.report.replica_moves == 0
    last = plan(current, replace(goal, max_moves=budget)).report
    assert last is not None
    for figure in ("replica_spread", "topic_replica_spread_max", "rack_violations"):
        assert last.before[figure] <= full.report.after[figure], figure


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_step_moves_replicas_only_where_the_full_plan_does_and_keeps_the_rack_rule(name: str) -> None:
    snapshot, goal = SHAPES[name][0], _goal(name, *SHAPES[name])
    full = {m.tp: m for m in plan(snapshot, goal).moves}
    step = plan(snapshot, replace(goal, max_moves=9))
    layout = RackLayout.of(snapshot.racks, sorted(step.report.target_brokers if step.report else ()))
    for move in step.moves:
        whole = full[move.tp]
        assert set(move.adding) <= set(whole.adding), move.tp
        assert set(move.removing) <= set(whole.removing), move.tp
        start = [b for b in move.original if b in layout.rack_of]
        if len(start) == len(move.original) and layout.outside(start) == 0:
            assert layout.outside(move.target) == 0, move.tp


def test_a_budget_that_covers_everything_is_the_full_plan() -> None:
    snapshot, goal = SHAPES["skewed start"]
    full = plan(snapshot, goal)
    covered = plan(snapshot, replace(goal, max_moves=10_000))
    assert covered.moves == full.moves
    assert covered.report is not None and covered.report.budget is not None
    assert covered.report.budget["steps_left"] == 0
    assert covered.report.budget["imbalance_after"] == 0


def test_a_byte_budget_is_never_exceeded_and_counts_what_the_moves_copy() -> None:
    snapshot, goal = SHAPES["bytes"][0], Goal(balance=BalanceMode.BYTES)
    full = plan(snapshot, goal)
    assert full.report is not None
    limit = full.report.bytes_moved // 3
    step = plan(snapshot, replace(goal, max_bytes=limit))
    assert step.report is not None and step.report.budget is not None
    copied = sum(len(m.adding) * m.size_bytes for m in step.moves)
    assert 0 < copied <= limit
    assert step.report.budget["bytes"] == copied == step.report.bytes_moved
    figures = step.report.budget
    assert figures["imbalance_unit"] == "bytes"
    assert figures["imbalance_after"] < figures["imbalance_before"]
    assert figures["full_plan_bytes"] == full.report.bytes_moved
    assert step.report.disk is not None  # the step's own bytes per broker
    assert step.report.disk["after"] != full.report.disk["after"]  # type: ignore[index]


def test_the_report_counts_the_steps_left_and_what_the_full_plan_moves() -> None:
    snapshot, goal = SHAPES["even racks, brokers added"]
    full = plan(snapshot, goal)
    assert full.report is not None
    step = plan(snapshot, replace(goal, max_moves=5))
    assert step.report is not None and step.report.budget is not None
    figures = step.report.budget
    assert figures["moves"] == 5 and figures["max_moves"] == 5
    assert figures["full_plan_moves"] == full.report.replica_moves
    assert figures["steps_left"] == -(-(full.report.replica_moves - 5) // 5)
    assert figures["imbalance_before"] - figures["imbalance_after"] == 5  # one replica out of place each
    assert figures["full_plan_after"] == dict(full.report.after)
    assert step.report.lower_bound == full.report.lower_bound


def test_a_byte_budget_counts_only_what_a_tiered_topics_new_replicas_copy() -> None:
    # Broker 4 joins empty and starts a tiered topic's replicas at the last tiered offset (KIP-1023):
    # each new replica there copies the 100 bytes its leader has not uploaded, not the 1,000 local.
    brokers = [Broker(1), Broker(2), Broker(3), Broker(4, fetch_last_tiered=True)]
    parts = [
        PartitionState(
            TopicPartition("t", p), (1 + p % 3, 1 + (p + 1) % 3), size_bytes=1000, untiered_bytes=100
        )
        for p in range(6)
    ]
    snapshot = ClusterSnapshot.of(brokers, parts, tiered={"t"})
    full = plan(snapshot, Goal())
    assert sum(4 in m.adding for m in full.moves) == 3
    step = plan(snapshot, Goal(max_bytes=250))
    assert step.report is not None and step.report.budget is not None
    assert [b for m in step.moves for b in m.adding] == [4, 4]
    assert step.report.budget["bytes"] == 200
