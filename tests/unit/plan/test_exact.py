"""The exact solve: every rule of the balance program without its relaxations, plus even leaders."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.clusters import generated
from support.scenarios import random_cases

from ferry.model import ClusterSnapshot, Goal, RackMode
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair.whole_plan import Exact, solve_exactly
from ferry.plan.planner import in_scope, lower_bound, plan, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def _posed(snapshot: ClusterSnapshot, goal: Goal) -> tuple[RackLayout, list[TopicDemand]]:
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


def _exact(snapshot: ClusterSnapshot, goal: Goal) -> tuple[Exact | None, int, RackLayout, list[TopicDemand]]:
    layout, demands = _posed(snapshot, goal)
    states = [state for parts in in_scope(snapshot, goal) for state in parts]
    bound = lower_bound(demands, assign_extras(layout, demands))
    return solve_exactly(states, [s.replicas for s in states], goal, layout, demands), bound, layout, demands


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    brokers=st.integers(4, 12),
    racks=st.integers(0, 4),
    topics=st.integers(1, 4),
    partitions=st.integers(2, 12),
    seed=st.integers(0, 2**16),
    mode=st.sampled_from([RackMode.STRICT, RackMode.EVEN]),
)
def test_the_optimum_meets_every_quota_and_never_beats_the_programs_bound(
    brokers: int, racks: int, topics: int, partitions: int, seed: int, mode: RackMode
) -> None:
    snapshot = generated(
        brokers=brokers, racks=racks, topics=topics, partitions=partitions, rf=3, seed=seed, skew=1.0
    )
    goal = Goal(rack_mode=mode)
    exact, bound, layout, demands = _exact(snapshot, goal)
    if exact is None:
        return
    # The program relaxes the same rules, so its optimum keeps at least as many replicas.
    assert exact.moves >= bound
    states = [state for parts in in_scope(snapshot, goal) for state in parts]
    assert exact.moves == sum(
        len(set(r) - set(s.replicas)) for s, r in zip(states, exact.replicas, strict=True)
    )
    led = Counter(exact.leaders)
    assert max(led[b] for b in layout.brokers) - min(led[b] for b in layout.brokers) <= 1
    start = 0
    for d in demands:
        topic = Counter(b for reps in exact.replicas[start : start + d.partitions] for b in reps)
        start += d.partitions
        quota = [topic[b] - d.quota.base[i] for i, b in enumerate(layout.brokers)]
        assert all(x in (0, 1) for x in quota) and sum(quota) == d.quota.extras
    for state, reps, leader in zip(states, exact.replicas, exact.leaders, strict=True):
        assert leader in reps
        assert [b for b in reps if b in state.replicas] == [b for b in state.replicas if b in reps]
        if mode is RackMode.STRICT:
            assert layout.violations(reps) == 0


def test_unequal_racks_keep_every_broker_in_the_band_and_so_does_the_exact_solve() -> None:
    # Unequal racks: the band is water-filled over racks, so the passes' plan stays in it; the exact
    # solve, started from a placement in the band, never trades that balance for its leaders.
    _, snapshot, goal = random_cases(3)[2]
    layout, demands = _posed(snapshot, goal)
    assert len(set(layout.sizes)) > 1
    states = [state for parts in in_scope(snapshot, goal) for state in parts]
    band = broker_band(layout, retarget(layout, demands))

    def in_band(replicas: list[tuple[int, ...]] | list[list[int]]) -> bool:
        load = Counter(b for reps in replicas for b in reps)
        return all(lo <= load[b] <= hi for b, (lo, hi) in zip(layout.brokers, band, strict=True))

    passes = plan(snapshot, goal)
    placed = {**{s.tp: s.replicas for s in states}, **passes.targets}
    assert in_band([placed[s.tp] for s in states])
    start = [[b] * lo for b, (lo, _) in zip(layout.brokers, band, strict=True)]
    exact = solve_exactly(states, start, goal, layout, demands)
    assert exact is not None
    assert in_band(exact.replicas)
