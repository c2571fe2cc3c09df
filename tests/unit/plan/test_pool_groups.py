"""Loaded brokers pooled apart (ferry.plan.balance.program.pool_groups): where at least half a rack is
loaded a topic pools them apart from the others, its first pooled program splits at the full
optimum and is smaller than with columns of their own; a rack whose loaded brokers' pools cannot be
split is pooled together in the next program. Clusters drawn by `benchmarks/shapes.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.pool_groups import EVERY, LOADED, OTHERS, PER_RACK, PoolGroups, group
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Setting
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import shapes  # the benchmarks folder is no package: found by path


def _posed(name: str, scale: float) -> tuple[RackLayout, list[TopicDemand], Setting]:
    shape = next(s for s in shapes.SHAPES if s.name == name).scaled(scale, "small")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(shape, 7))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    return layout, demands, Setting(broker_band(layout, demands), 0, None, False)


def test_a_grown_clusters_loaded_brokers_are_pooled_apart_and_the_program_splits_at_the_optimum() -> None:
    # 10k partitions of a cluster grown from 120 to 132 brokers over six racks: most old brokers are
    # loaded, and with columns of their own the first program had a third more columns.
    layout, demands, setting = _posed("grown 120->132, 6 racks", 0.01)
    program = ProgramState(layout, demands, room_rows=set(), pool=True)
    pooled = solve(program, setting)
    assert program.groups.apart.all() and not program.unpooled
    kinds = {g % PER_RACK for g in program.pools.group}
    assert kinds == {OTHERS, LOADED}
    every_rack = set(range(len(layout.members)))
    own = ProgramState(layout, demands, room_rows=set(), pool=True, refined=Refinements(together=every_rack))
    alone = solve(own, setting)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert pooled is not None and alone is not None and full is not None
    assert sum(pooled.kept) == sum(alone.kept) == sum(full.kept)
    assert len(program.upper) < 0.8 * len(own.upper)


def test_a_rack_whose_loaded_brokers_pools_cannot_be_split_is_pooled_together_in_the_next_program() -> None:
    # 10k partitions of the skewed start, with enough brokers counted loaded that every rack is
    # pooled apart: a few loaded brokers with room left are idle for too few of the topics whose
    # pools took their extras.
    layout, demands, setting = _posed("skewed rebalance, 200 brokers", 0.01)
    first = ProgramState(layout, demands, room_rows=set(), pool=True)
    full = solve(first, setting)
    assert full is not None and first.loaded is not None
    loaded = set(first.loaded)
    for members in layout.members:
        at = [layout.position[b] for b in members]
        loaded |= set([i for i in at if i not in loaded][: (len(at) + 1) // 2])
    refined = Refinements()
    program = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset(loaded))
    assert solve(program, setting) is None and program.groups.apart.all()
    assert program.broke.together and not program.broke.unpool
    refined.add(program.broke)
    again = ProgramState(
        layout, demands, room_rows=set(), pool=True, loaded=frozenset(loaded), refined=refined
    )
    solved = solve(again, setting)
    assert not again.groups.apart[sorted(refined.together)].any() and not again.unpooled
    assert solved is not None and sum(solved.kept) == sum(full.kept)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_the_groups_of_a_rack_partition_it_and_pool_apart_only_where_half_is_loaded(
    sizes: list[int], data: st.DataObject
) -> None:
    racks = {f"r{k}": list(range(sum(sizes[:k]), sum(sizes[: k + 1]))) for k in range(len(sizes))}
    layout = RackLayout.of(
        {b: rack for rack, members in racks.items() for b in members}, sorted(range(sum(sizes)))
    )
    loaded = data.draw(st.sets(st.sampled_from(range(sum(sizes)))))
    together = data.draw(st.sets(st.sampled_from(range(len(sizes)))))
    groups = PoolGroups.of(layout, [layout.position[b] for b in loaded], together)
    for k, members in enumerate(layout.members):
        at = sorted(layout.position[b] for b in members)
        mine = [groups.members(group(k, kind)) for kind in (EVERY, OTHERS, LOADED)]
        heavy = [i for i in at if layout.brokers[i] in loaded]
        apart = 2 * len(heavy) >= len(at) and len(heavy) < len(at) and k not in together
        assert groups.apart[k] == apart
        if apart:
            assert mine == [[], [i for i in at if i not in heavy], heavy]
        else:
            assert mine == [at, [], []]
    assert np.array_equal(np.sort(groups.flat), np.arange(sum(sizes)))
