"""The balance program: the lazy rack-room rows and their repair keep the optimum of the whole one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.clusters import generated

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair.per_partition import realise
from ferry.plan.balance.setting import Setting
from ferry.plan.planner import in_scope, plan, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def _demands(snapshot: ClusterSnapshot, goal: Goal) -> tuple[RackLayout, list[TopicDemand]]:
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterSnapshot, Goal]:
    """Small racked clusters; most goals lower or raise the replication factor: rack-room rows bind
    most often where partitions shed or gain replicas (of these 120 examples, 18 relaxations broke
    rows when written, 16 of them needing the fallback round too: both paths are covered)."""
    brokers = draw(st.integers(6, 16))
    rf = draw(st.integers(2, 4))
    snapshot = generated(
        brokers=brokers,
        racks=draw(st.integers(2, 5)),
        topics=draw(st.integers(2, 8)),
        partitions=draw(st.integers(10, 40)),
        rf=rf,
        seed=draw(st.integers(0, 2**16)),
        skew=draw(st.sampled_from([0.0, 1.0])),
    )
    kind = draw(st.sampled_from(["down", "down", "up", "remove", "rebalance"]))
    if kind == "down":
        return snapshot, Goal(replication_factors={t: rf - 1 for t in snapshot.topics})
    if kind == "up":
        return snapshot, Goal(replication_factors={t: rf + 1 for t in snapshot.topics})
    if kind == "remove":
        return snapshot, Goal(brokers=frozenset(range(brokers - 1)))
    return snapshot, Goal()


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_lazy_rows_keep_as_many_replicas_as_every_row_up_front(case: tuple[ClusterSnapshot, Goal]) -> None:
    layout, demands = _demands(*case)
    lazy = assign_extras(layout, demands)
    whole = assign_extras(layout, demands, lazy=False)
    assert sum(lazy.kept) == sum(whole.kept)


@pytest.mark.parametrize(
    ("brokers", "racks", "topics", "partitions", "seed", "outcomes"),
    [
        # The relaxation breaks a row of topic 2; re-solving it alone keeps the optimum.
        (12, 4, 6, 30, 0, [True]),
        # Topics 2 and 5 alone cannot keep as many: their rows join the whole program, whose next
        # solution breaks topic 0's rows only, and that repair succeeds.
        (12, 3, 8, 40, 2, [False, True]),
    ],
)
def test_a_relaxation_that_breaks_room_rows_is_repaired_or_solved_again(
    monkeypatch: pytest.MonkeyPatch,
    brokers: int,
    racks: int,
    topics: int,
    partitions: int,
    seed: int,
    outcomes: list[bool],
) -> None:
    snapshot = generated(brokers=brokers, racks=racks, topics=topics, partitions=partitions, rf=3, seed=seed)
    goal = Goal(replication_factors=dict.fromkeys(snapshot.topics, 2))
    seen: list[bool] = []
    original = balance.repair

    def spy(*args: Any, **kwargs: Any) -> Balance | None:
        out = original(*args, **kwargs)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(balance, "repair", spy)
    layout, demands = _demands(snapshot, goal)
    assert sum(assign_extras(layout, demands).kept) == sum(assign_extras(layout, demands, lazy=False).kept)
    assert seen == outcomes, "the case no longer takes the path it is here for; pick another seed"
    result = plan(snapshot, goal)
    assert result.figures.replica_moves == result.figures.lower_bound


@st.composite
def with_single_replicas(draw: st.DrawFn) -> tuple[ClusterSnapshot, Goal]:
    """Small clusters, skewed or not, some of whose topics go down to one replica: their partitions
    are led by that replica, so the balance program's leader cap counts them."""
    brokers = draw(st.integers(3, 9))
    topics = draw(st.integers(2, 9))
    snapshot = generated(
        brokers=brokers,
        racks=draw(st.sampled_from([0, 2, 3])),
        topics=topics,
        partitions=draw(st.integers(1, 12)),
        rf=draw(st.integers(1, 3)),
        seed=draw(st.integers(0, 2**16)),
        skew=draw(st.sampled_from([0.0, 2.0])),
    )
    singles = draw(st.sets(st.sampled_from(sorted(snapshot.topics)), min_size=1))
    return snapshot, Goal(replication_factors=dict.fromkeys(singles, 1))


def _cap_first(layout: RackLayout, demands: list[TopicDemand]) -> Balance:
    """The ladder as it was posed before the cap's relaxation: each rung with the leader cap's rows
    first, then without them."""
    demands = retarget(layout, demands)
    band = broker_band(layout, demands)
    cap = divmod(sum(d.partitions for d in demands), len(layout.brokers))
    for voluntary in (False, True):
        for rung_band, slack in balance._rungs(layout, demands, band):
            for leaders in (cap, None):
                solved = balance._solve_lazily(layout, demands, Setting(rung_band, slack, leaders, voluntary))
                if solved is not None:
                    return realise(layout, demands, solved)
    raise AssertionError("no rung has a solution")


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(with_single_replicas())
def test_the_leader_cap_is_met_where_it_can_be_and_keeps_as_many_replicas(
    case: tuple[ClusterSnapshot, Goal],
) -> None:
    """The cap's rows are posed only where the optimum without them breaks the cap: the answer keeps
    as many replicas as the capped program's, and meets the cap wherever that program met it."""
    layout, demands = _demands(*case)
    reference = _cap_first(layout, demands)
    found = assign_extras(layout, demands)
    assert sum(found.kept) == sum(reference.kept)
    targeted = retarget(layout, demands)
    cap = divmod(sum(d.partitions for d in targeted), len(layout.brokers))
    if balance._leaders_fit(reference, targeted, cap):
        assert balance._leaders_fit(found, targeted, cap)


def test_single_replicas_crowding_one_broker_are_spread_to_the_leader_cap() -> None:
    """Six single-replica topics on broker 0 and six two-replica ones on brokers 1 and 2: the band
    (six replicas each) lets every replica stay, but broker 0 would then lead six partitions and the
    others three each. The optimum without the cap breaks it (at most four each, twelve partitions
    over three brokers), so the capped program decides: two of the singles move."""

    def partition(topic: str, replicas: list[int]) -> PartitionState:
        return PartitionState(TopicPartition(topic, 0), tuple(replicas), replicas[0], tuple(replicas), 10**9)

    states = [partition(f"single-{i}", [0]) for i in range(6)] + [
        partition(f"pair-{i}", [1, 2]) for i in range(6)
    ]
    layout, demands = _demands(ClusterSnapshot.of([Broker(i, None) for i in range(3)], states), Goal())
    found = assign_extras(layout, demands)
    led = [
        sum(q[i] for q, d in zip(found.quotas, demands, strict=True) if d.single_replica) for i in range(3)
    ]
    assert max(led) == 4
    assert sum(found.kept) == sum(_cap_first(layout, demands).kept) == 14
