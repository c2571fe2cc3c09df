"""The balance program's state and rows (ferry.plan.balance.program: state, topic_rows, broker_rows,
integer_program): what build poses for a Setting, and what solve reads back."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.clusters import balanced, generated, with_new_brokers
from support.invariants import final_placement

from ferry.model import ClusterSnapshot, Goal, PartitionState
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program.integer_program import build, solve
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Outside, Setting
from ferry.plan.balance.solvers.transport import BROKER, TOPIC
from ferry.plan.planner import in_scope, plan, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
GOALS = st.sampled_from([Goal(), Goal(brokers=frozenset({0, 1, 2}))])


def posed(snapshot: ClusterSnapshot, goal: Goal | None = None) -> tuple[RackLayout, list[TopicDemand]]:
    goal = goal or Goal()
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])


snapshots = st.builds(
    generated,
    brokers=st.integers(3, 8),
    racks=st.integers(0, 3),
    topics=st.integers(1, 4),
    partitions=st.integers(1, 8),
    rf=st.integers(1, 3),
    seed=st.integers(0, 999),
    skew=st.sampled_from([0.0, 2.0]),
)


def test_a_state_wants_every_rack_room_row_unless_told_which() -> None:
    layout, demands = posed(generated(brokers=4, racks=2, topics=2, partitions=3, rf=2, seed=0))
    state = ProgramState(layout, demands)
    assert state.outside == Outside.none(4) and state.wants_room(1, 1) and state.room_topics(1)
    told = ProgramState(layout, demands, room_rows={(1, 0)}, refined=Refinements(capped={(0, 1)}))
    assert told.wants_room(1, 0) and not told.wants_room(1, 1) and not told.wants_room(0, 0)
    assert told.room_topics(1) and not told.room_topics(0) and told.capped(0, 1) and not told.capped(0, 0)


@SETTINGS
@given(snapshots, st.sampled_from([0, 1, None]))
def test_build_hands_out_each_topics_extras_and_holds_each_broker_in_its_band_widened_by_the_slack(
    snapshot: ClusterSnapshot, slack: int | None
) -> None:
    layout, demands = posed(snapshot)
    band = broker_band(layout, demands)
    state = ProgramState(
        layout, demands, outside=Outside((3,) * len(layout.brokers), (0,) * len(layout.brokers))
    )
    build(state, Setting(band, slack, None, False))
    rows: dict[int, set[int]] = {}
    for r, c in zip(state.rows, state.cols, strict=True):
        rows.setdefault(r, set()).add(c)
    giving = [t for t, d in enumerate(demands) if d.quota.extras > 0]
    topic_rows = [r for r, kind in enumerate(state.kinds) if kind == TOPIC]
    assert [rows[r] for r in topic_rows] == [{c for _, c in state.extras.of(t)} for t in giving]
    assert (
        [state.lows[r] for r in topic_rows]
        == [state.highs[r] for r in topic_rows]
        == [demands[t].quota.extras for t in giving]
    )
    at: dict[int, set[int]] = {}
    for t in giving:
        for i, c in state.extras.of(t):
            at.setdefault(i, set()).add(c)
    broker_rows = [r for r, kind in enumerate(state.kinds) if kind == BROKER]
    if slack is None:
        assert not broker_rows
        return
    assert [rows[r] for r in broker_rows] == [at[i] for i in sorted(at)]
    base = np.sum([d.quota.base for d in demands], axis=0) + 3  # the base loads and what is held outside
    for r, i in zip(broker_rows, sorted(at), strict=True):
        assert (state.lows[r], state.highs[r]) == (band[i][0] - base[i] - slack, band[i][1] - base[i] + slack)


def test_a_program_with_no_extras_reads_back_every_base_quota_and_keeps_everything() -> None:
    layout, demands = posed(balanced(brokers=6, racks=3, topics=3, partitions=6, rf=3))
    state = ProgramState(layout, demands)
    found = solve(state, Setting(broker_band(layout, demands), 0, None, False))
    assert len(state.upper) == 0 and found is not None
    assert found.quotas == [d.quota.base for d in demands] and found.kept == [18, 18, 18]


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots, GOALS)
def test_solve_keeps_every_replica_of_a_cluster_the_planner_balanced_and_no_fewer_than_the_plan_keeps(
    snapshot: ClusterSnapshot, goal: Goal
) -> None:
    made = plan(snapshot, goal)
    layout, demands = posed(snapshot, goal)
    loosest = solve(
        ProgramState(layout, demands, voluntary=True), Setting(broker_band(layout, demands), None, None, True)
    )
    assert loosest is not None and made.figures.replica_moves >= sum(
        d.quota.total - k for d, k in zip(demands, loosest.kept, strict=True)
    )
    placed = final_placement(snapshot, made)
    again = ClusterSnapshot.of(
        snapshot.brokers, [PartitionState(p.tp, placed[p.tp]) for p in snapshot.partitions]
    )
    layout, demands = posed(again, goal)
    found = solve(ProgramState(layout, demands), Setting(broker_band(layout, demands), None, None, False))
    assert found is not None and found.kept == [d.quota.total for d in demands]


@SETTINGS
@given(snapshots, GOALS, st.booleans())
def test_no_broker_keeps_more_than_its_quota_and_a_topic_re_solved_beside_the_rest_keeps_as_many_in_band(
    snapshot: ClusterSnapshot, goal: Goal, voluntary: bool
) -> None:
    layout, demands = posed(snapshot, goal)
    setting = Setting(broker_band(layout, demands), 1, None, voluntary)
    whole = solve(ProgramState(layout, demands, voluntary=voluntary), setting)
    assume(whole is not None)  # slack 1 may leave no solution (none of these examples)
    assert whole is not None
    everyone = Outside.of(len(layout.brokers), demands, whole.quotas)
    for d, quota, kept in zip(demands, whole.quotas, whole.kept, strict=True):
        extra = [q - b for q, b in zip(quota, d.quota.base, strict=True)]
        assert set(extra) <= {0, 1} and sum(extra) == d.quota.extras
        assert kept <= sum(min(h, q) for h, q in zip(d.held, quota, strict=True))
        # Every other topic held as solved: this one alone can keep no more, and keeps as many.
        outside = everyone.shifted(quota, single=d.single_replica, sign=-1)
        alone = solve(ProgramState(layout, [d], voluntary=voluntary, outside=outside), setting)
        assert alone is not None and alone.kept == [kept]
        loads = np.add(outside.load, alone.quotas[0])
        assert all(lo - 1 <= n <= hi + 1 for (lo, hi), n in zip(setting.band, loads, strict=True))


def test_single_replica_topics_fit_the_leader_cap_one_above_low_on_at_most_extra_brokers() -> None:
    snapshot = with_new_brokers(generated(brokers=4, racks=2, topics=5, partitions=5, rf=1, seed=3), 2, 2)
    layout, demands = posed(snapshot)
    cap = divmod(sum(d.partitions for d in demands), len(layout.brokers))
    assert cap == (4, 1) and all(d.single_replica for d in demands)
    band = broker_band(layout, demands)
    free = solve(ProgramState(layout, demands), Setting(band, None, None, False))
    capped = solve(ProgramState(layout, demands), Setting(band, None, cap, False))
    assert free is not None and capped is not None
    assert sum(free.kept) > sum(capped.kept)  # the cap binds: every uncapped optimum breaks it
    led = np.sum(capped.quotas, axis=0)  # each single replica leads its partition
    assert max(led) <= 5 and Counter(led.tolist())[5] <= 1
    # Single replicas held outside count too: with 4 on every broker, 5 more partitions find no room.
    full = Outside((4,) * 6, (4,) * 6)
    assert solve(ProgramState(layout, demands[:1], outside=full), Setting(band, None, cap, False)) is None
    assert solve(ProgramState(layout, demands[:1], outside=Outside.none(6)), Setting(band, None, cap, False))
