"""The rows of pinned partitions owing racks a replica, held back from the lazy rounds' solve
(:mod:`ferry.plan.balance.program.deferred_rows`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.clusters import generated

from ferry.model import ClusterSnapshot, Goal
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program.deferred_rows import DeferredRows
from ferry.plan.balance.program.integer_program import build
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Setting
from ferry.plan.balance.solvers.network_program import network_kinds
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def _demands(snapshot: ClusterSnapshot, goal: Goal) -> tuple[RackLayout, list[TopicDemand]]:
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


def _rows() -> DeferredRows:
    """A partition keeping columns 0 and 1 in a rack that asks at least one of it (``z``: column 2),
    and the rack's capacity: kept plus owed, less the extra (column 3), at most 1."""
    rows = DeferredRows()
    rows.add([(0, 1.0), (1, 1.0), (2, 1.0)], (1, np.inf), (4, 1), z=2)
    rows.add([(0, 1.0), (1, 1.0), (2, 1.0), (3, -1.0)], (-np.inf, 1), (4, 1))
    return rows


@pytest.mark.parametrize(
    ("solution", "broken"),
    [
        ([0, 0, 0, 0], set()),  # owes one, and the rack has room for it
        ([1, 0, 0, 0], set()),  # keeps one: owes nothing
        ([1, 0, 1, 0], set()),  # the solver left z at 1 where nothing is owed: it is set to 0
        ([1, 1, 0, 0], {(4, 1)}),  # keeps two where the rack has room for one
        ([1, 1, 0, 1], set()),  # the rack's extra makes room
    ],
)
def test_held_back_rows_are_read_with_what_is_owed(
    solution: list[float], broken: set[tuple[int, int]]
) -> None:
    assert _rows().broken(np.array(solution, dtype=np.float64)) == broken


def test_a_crowded_program_is_a_network_once_its_owing_rows_are_held_back() -> None:
    """Three replicas over two racks: every partition owes both racks one, and its rows of no
    network's kind are all held back."""
    snapshot = generated(brokers=8, racks=2, topics=6, partitions=20, rf=3, seed=1, skew=1.0)
    layout, demands = _demands(snapshot, Goal())
    demands = retarget(layout, demands)
    rung_band, slack = balance._rungs(layout, demands, broker_band(layout, demands))[0]
    setting = Setting(rung_band, slack, None, False)
    for defer in (False, True):
        state = ProgramState(layout, demands, room_rows=set(), defer=defer)
        build(state, setting)
        assert network_kinds(state.kinds, state.implied) is defer
    assert len(state.deferred) > 0


@st.composite
def crowded(draw: st.DrawFn) -> tuple[ClusterSnapshot, Goal]:
    """Small clusters where a rack may hold two replicas of a partition (more replicas than racks),
    skewed or not, rebalanced, shrunk by a broker or raised a replica."""
    racks = draw(st.integers(1, 3))
    rf = draw(st.integers(racks + 1, 4))
    brokers = draw(st.integers(rf + 2, 12))
    snapshot = generated(
        brokers=brokers,
        racks=racks,
        topics=draw(st.integers(2, 8)),
        partitions=draw(st.integers(4, 30)),
        rf=rf,
        seed=draw(st.integers(0, 2**16)),
        skew=draw(st.sampled_from([0.0, 1.0, 2.0])),
    )
    kind = draw(st.sampled_from(["rebalance", "remove", "up"]))
    if kind == "remove":
        return snapshot, Goal(brokers=frozenset(range(brokers - 1)))
    if kind == "up":
        return snapshot, Goal(replication_factors=dict.fromkeys(snapshot.topics, rf + 1))
    return snapshot, Goal()


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(crowded())
def test_held_back_rows_keep_as_many_replicas_as_every_row_up_front(
    case: tuple[ClusterSnapshot, Goal],
) -> None:
    """Where the optimum breaks a held-back row, its topic is repaired or its rows join the program
    (a program this small repairs every topic): the count is the whole program's."""
    layout, demands = _demands(*case)
    whole = assign_extras(layout, demands, lazy=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(balance, "DEFERRED_FROM", 0)
        lazy = assign_extras(layout, demands)
    assert sum(lazy.kept) == sum(whole.kept)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(crowded())
def test_rows_posed_after_a_failed_settle_keep_as_many_as_every_row_up_front(
    case: tuple[ClusterSnapshot, Goal],
) -> None:
    """Where no re-solve settles what the optimum breaks, the later programs pose every row: the
    count is the whole program's."""
    layout, demands = _demands(*case)
    whole = assign_extras(layout, demands, lazy=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(balance, "DEFERRED_FROM", 0)
        patch.setattr(balance, "settle", lambda *_: None)
        lazy = assign_extras(layout, demands)
    assert sum(lazy.kept) == sum(whole.kept)
