"""Rows for full pools (ferry.plan.balance.program.full_pools): where a pooled optimum fills more pools of a
rack than a broker idle for them can take, the next program keeps the rack's pools, rules such optima
out, splits, and keeps the full program's optimum."""

from __future__ import annotations

import pytest
from support.clusters import generated

from ferry.model import Goal
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program import full_pools as saturation
from ferry.plan.balance.program import integer_program as program_module
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Setting
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def _posed(seed: int, partitions: int, skew: float) -> tuple[RackLayout, list[TopicDemand], Setting]:
    # Three racks of three brokers, the last broker of each new; replicas placed without regard
    # to racks, so partitions are pinned (the rows against full pools are no network's). Every
    # broker is pooled (no loaded broker has columns of its own): the pools that fill are what is
    # tested.
    snapshot = generated(
        brokers=9, racks=3, topics=10, partitions=partitions, rf=3, seed=seed, occupied=6, skew=skew
    )
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, Goal()))
    demands = retarget(layout, [prepare_topic(p, Goal(), layout)[1] for p in in_scope(snapshot, Goal())])
    return layout, demands, Setting(broker_band(layout, demands), 0, None, False)


CASES = [(3, 5, 0.0), (9, 5, 0.5), (7, 8, 0.0), (0, 8, 0.5), (34, 8, 2.0)]


@pytest.mark.parametrize(("seed", "partitions", "skew"), CASES)
def test_full_pools_no_broker_can_take_are_ruled_out_and_the_program_splits(
    seed: int, partitions: int, skew: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, demands, setting = _posed(seed, partitions, skew)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    found = solve(pooled, setting)
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert pooled.posed is None  # the matrix kept for solving again is let go
    # Without the rows, the same optimum comes back and its pools cannot be split.
    monkeypatch.setattr(saturation, "saturation_rows", lambda program, racks: None)
    monkeypatch.setattr(program_module, "saturation_rows", lambda program, racks: None)
    without = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    assert solve(without, setting) is None
    assert without.broke.saturate and without.broke.unpool


@pytest.mark.parametrize(("seed", "partitions", "skew"), CASES[:2])
def test_a_later_program_poses_the_rows_from_the_start(seed: int, partitions: int, skew: float) -> None:
    layout, demands, setting = _posed(seed, partitions, skew)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    first = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    solve(first, setting)
    refined = Refinements(saturate={k for k in range(len(layout.members))})
    later = ProgramState(layout, demands, room_rows=set(), pool=True, refined=refined, loaded=frozenset())
    found = solve(later, setting)
    assert found is not None and full is not None and not later.unpooled
    assert list(later.pools.topic) == list(first.pools.topic)  # every rack kept its pools
    assert sum(found.kept) == sum(full.kept)
