"""A skewed start that ignores racks (most partitions hold two replicas in one rack) plans at its
bound: the balance program is a flow with holder and pair nodes, and a topic whose greedy placement
loses a kept replica is placed again from the exact flow; the brokers it loads get columns of their
own in the pooled program, whose first optimum then splits. Drawn by the scale benchmarks' own
generator (`benchmarks/shapes.py`), the same cluster on every machine."""

from __future__ import annotations

import sys
from dataclasses import replace
from itertools import groupby
from pathlib import Path

import pytest

from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.assign_extras import SPLIT_ROUNDS, _solve_pooled
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair.per_partition import realise_counting
from ferry.plan.balance.setting import Setting
from ferry.plan.planner import in_scope, plan, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import shapes  # the benchmarks folder is no package: found by path


def test_a_skewed_start_of_30k_partitions_plans_at_its_bound() -> None:
    # At this draw the greedy placement of two topics whose pinned partitions' keeps the balance
    # pass chose lost a kept replica each: 32,270 moves against a bound of 32,268.
    skewed = next(s for s in shapes.SHAPES if s.start == "skewed").scaled(0.03, "30k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(skewed, 7))
    result = plan(snapshot, goal)  # type: ignore[arg-type]
    assert result.report is not None
    assert result.report.replica_moves == result.report.lower_bound == 32_268
    after = result.report.balance["after"]
    assert (after["replica_spread"], after["rack_violations"]) == (1, 0)


def test_a_skewed_starts_first_pooled_program_splits_once_loaded_brokers_have_their_own_columns() -> None:
    # 10k partitions of the skewed shape: a few brokers of each rack hold so many topics above their
    # base that those topics' extras fill their bands; pooled like the others, they made the first
    # pooled program's pools unsplittable and a second program was solved.
    skewed = next(s for s in shapes.SHAPES if s.start == "skewed").scaled(0.01, "10k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(skewed, 7))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    setting = Setting(broker_band(layout, demands), 0, None, False)
    refined = Refinements()
    program, pooled = _solve_pooled(layout, demands, setting, set(), refined, SPLIT_ROUNDS)
    assert program.pool and not refined  # the first pooled program split and broke no row
    assert program.loaded and len(program.loaded) < len(layout.brokers) // 2
    assert not any(set(at) & program.loaded for at in program.pools.split)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert pooled is not None and full is not None
    assert sum(pooled.kept) == sum(full.kept)
    # With every broker pooled, the same program's pools cannot be split.
    every = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    assert solve(every, setting) is None and every.broke.unpool


def test_single_replica_topics_leave_pools_unsplit_once_then_all_pools_of_several_extras_go() -> None:
    # 20k partitions of a skewed start at RF 1 to 4: the single-replica topics keep a column per
    # broker and fill the room of brokers that pools of several extras needed. Unpooling only the
    # racks that failed took five programs here (the shortage moved to the next racks each time);
    # every pool of several extras unpooled at once, the second program splits.
    mixed = next(s for s in shapes.SHAPES if s.rfs and s.start == "skewed").scaled(0.02, "20k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(mixed, 7))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    assert any(d.single_replica for d in demands)
    setting = Setting(broker_band(layout, demands), 0, None, False)
    refined = Refinements()
    program, pooled = _solve_pooled(layout, demands, setting, set(), refined, SPLIT_ROUNDS)
    assert program.pool and not program.unpooled  # a pooled program split, before the rounds ran out
    assert {k for _, k in refined.unpool} == set(range(len(layout.members)))  # every rack, at once
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert pooled is not None and full is not None
    assert sum(pooled.kept) == sum(full.kept)


def test_with_single_replica_topics_two_pooled_programs_that_do_not_split_end_the_pooling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10k partitions of a grown cluster at RF 1 to 3: neither pooled program splits (the second with
    # every pool of several extras unpooled), and the rounds after them only moved the shortage:
    # four pooled programs and then the one without pools. Now two, then that one, the same optimum.
    grown = replace(next(s for s in shapes.SHAPES if s.name == "grown 180->200"), rfs=(1, 2, 3))
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(grown.scaled(0.01, "10k"), 7))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    setting = Setting(broker_band(layout, demands), 0, None, False)
    pooled: list[bool] = []

    def counted(program: ProgramState, posed: Setting) -> Balance | None:
        pooled.append(program.pool)
        return solve(program, posed)

    monkeypatch.setattr(balance, "solve", counted)
    found = balance._solve_lazily(layout, demands, setting)
    # The solves after the program without pools are the lazy rounds' repairs, pooled none.
    assert pooled[:3] == [True, True, False] and pooled.count(True) == 2
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert found is not None and full is not None
    assert sum(found.kept) == sum(full.kept)


def test_short_topics_trade_with_partners_of_their_own_replication_factor() -> None:
    # 30k partitions of a skewed start at RF 1 to 3 over three racks: at RF 3 every partition holds
    # one replica in each rack, so such a topic cannot take the other side of an RF 2 topic's move
    # from one rack to another. With partners of every factor in one list the exact pass gave most
    # RF 2 chunks RF 3 partners and planned a move above the bound (19,907 against 19,906).
    three = next(s for s in shapes.SHAPES if s.name == "skewed rebalance, 3 racks of 20")
    drawn = shapes.generate(replace(three, rfs=(1, 2, 3)).scaled(0.03, "30k"), 7)
    result = plan(*shapes.snapshot_and_goal(drawn))  # type: ignore[arg-type]
    assert result.report is not None
    assert result.report.replica_moves == result.report.lower_bound == 19_906
    after = result.report.balance["after"]
    assert (after["replica_spread"], after["rack_violations"]) == (1, 0)


def test_single_replica_topics_pooled_like_the_others_where_no_leader_cap_is_posed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The 20k draw at RF 1 to 4 of the test above: its single-replica topics pooled too, the first
    # pooled program splits, and its optimum meets the leader cap, so no other program is solved.
    mixed = next(s for s in shapes.SHAPES if s.rfs and s.start == "skewed").scaled(0.02, "20k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(mixed, 7))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    programs: list[tuple[bool, bool, bool]] = []

    def seen(program: ProgramState, posed: Setting) -> Balance | None:
        found = solve(program, posed)
        programs.append((program.pool, program.pool_singles, program.unpooled))
        return found

    monkeypatch.setattr(balance, "solve", seen)
    found = balance.assign_extras(layout, demands)
    assert programs[0] == (True, True, False)  # pooled, singles too, and split
    assert not any(pooled and not singles for pooled, singles, _ in programs)
    cap = divmod(sum(d.partitions for d in demands), len(layout.brokers))
    assert balance._leaders_fit(found, demands, cap)
    setting = Setting(broker_band(layout, demands), 0, None, False)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert full is not None and sum(found.kept) == sum(full.kept)


def _thirty_k_three_racks() -> tuple[RackLayout, list[TopicDemand]]:
    """The 30k three-rack draw at RF 1 to 3 above."""
    three = next(s for s in shapes.SHAPES if s.name == "skewed rebalance, 3 racks of 20")
    snapshot, goal = shapes.snapshot_and_goal(
        shapes.generate(replace(three, rfs=(1, 2, 3)).scaled(0.03, "30k"), 7)
    )
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))  # type: ignore[arg-type]
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])  # type: ignore[arg-type]
    return layout, demands


@pytest.mark.parametrize(("missing", "programs", "short"), [(1, [True, False], [1, 0]), (0, [True], [0])])
def test_where_the_pooled_singles_optimum_leaves_topics_short_the_rung_is_solved_with_them_apart(
    monkeypatch: pytest.MonkeyPatch, missing: int, programs: list[bool], short: list[int]
) -> None:
    # With its single-replica topics pooled the program lands on one optimum among equals; the exact
    # pass completes it here. Where it leaves a topic ``missing`` a replica (as once on this draw,
    # before the pools that overfill a broker were solved again on their own: 19,906 moves above),
    # the rung is solved again with them apart, and that optimum is completed. Where it completes
    # the first, no second program is solved.
    layout, demands = _thirty_k_three_racks()
    pooled: list[bool] = []
    found_short: list[int] = []

    def seen(program: ProgramState, posed: Setting) -> Balance | None:
        pooled.append(program.pool_singles)
        return solve(program, posed)

    def counting(
        layout: RackLayout, demands: list[TopicDemand], solved: Balance, **_: bool
    ) -> tuple[Balance, int]:
        found, left = realise_counting(layout, demands, solved)
        found_short.append(left + (missing if not found_short else 0))
        return found, found_short[-1]

    monkeypatch.setattr(balance, "solve", seen)
    monkeypatch.setattr(balance, "realise_counting", counting)
    found = balance.assign_extras(layout, demands)
    assert [kind for kind, _ in groupby(pooled)] == programs  # runs of programs of each kind
    assert found_short == short
    setting = Setting(broker_band(layout, demands), 0, None, False)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert full is not None and sum(found.kept) == sum(full.kept)
