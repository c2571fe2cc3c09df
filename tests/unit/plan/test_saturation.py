"""Where a pooled optimum fills more pools of a rack than a broker idle for them can take: in a network
program those racks are solved again with a column per idle broker (ferry.plan.balance.program.idle_columns),
otherwise rows rule such optima out (ferry.plan.balance.program.full_pools); either way the program keeps the
rack's pools, splits, and keeps the full program's optimum."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.clusters import generated

from ferry.model import Goal
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program import full_pools as saturation
from ferry.plan.balance.program import idle_columns
from ferry.plan.balance.program import integer_program as program_module
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Setting
from ferry.plan.balance.solvers.transport import UNSOLVED
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import shapes  # the benchmarks folder is no package: found by path


def _three_racks(seed: int, rfs: tuple[int, ...] = (3,)) -> tuple[RackLayout, list[TopicDemand], Setting]:
    """30k partitions of the three-rack skewed start of `benchmarks/shapes.py`, the draw of ``seed``,
    at the replication factors ``rfs``."""
    shape = next(s for s in shapes.SHAPES if s.name == "skewed rebalance, 3 racks of 20")
    three = replace(shape, rfs=rfs).scaled(0.03, "30k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(three, seed))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])
    return layout, demands, Setting(broker_band(layout, demands), 0, None, False)


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
def test_a_network_whose_full_pools_no_broker_can_take_is_solved_per_idle_broker_and_splits(
    seed: int, partitions: int, skew: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, demands, setting = _posed(seed, partitions, skew)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    assert full is not None
    solved_again = _recorded(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    found = solve(pooled, setting)
    assert solved_again, "the pooled optimum's full pools no broker could take were solved again"
    # Columns per idle broker in the pools that can fill were enough: no second flow.
    assert [every for _, every in solved_again] == [False]
    assert found is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert len(pooled.kinds) == len(pooled.lows) and not pooled.broke.saturate  # no row was added
    assert all(len(split) == len(set(split)) for split in pooled.pools.split)  # one extra a broker
    assert pooled.posed is None  # the matrix kept for solving again is let go
    # Bands hold: every broker's load is within the band the program was given.
    loads = [sum(q[i] for q in found.quotas) for i in range(len(layout.brokers))]
    assert all(lo <= load <= hi for load, (lo, hi) in zip(loads, setting.band, strict=True))


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[set[int], bool]]:
    """The groups and ``every`` of each call of the per-broker flow, as the program makes them; with
    no held solve before it (:func:`_without_held`)."""
    _without_held(monkeypatch)
    return _recorded_whole(monkeypatch)


def _recorded_whole(monkeypatch: pytest.MonkeyPatch) -> list[tuple[set[int], bool]]:
    """The groups and ``every`` of each call of the per-broker flow over the whole program, the
    held solves before it left as they are."""
    calls: list[tuple[set[int], bool]] = []
    whole = idle_columns.per_broker_optimum

    def recorded(program: ProgramState, groups: set[int], *, every: bool = False) -> object:
        calls.append((set(groups), every))
        return whole(program, groups, every=every)

    monkeypatch.setattr(program_module, "per_broker_optimum", recorded)
    return calls


def _without_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the held solve of the overfull pools' topics never kept as many replicas: the whole
    program is solved again."""
    monkeypatch.setattr(program_module, "held_per_broker", lambda *program, **relax: None)


@pytest.mark.parametrize(("seed", "partitions", "skew"), CASES[:3])
def test_where_the_pools_that_can_fill_are_not_enough_every_pool_of_the_group_gets_columns(
    seed: int, partitions: int, skew: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if no pool could fill, the first flow solves the pooled program again and its groups still
    fail: the second gives every pool of theirs a column per idle broker, and that splits."""
    layout, demands, setting = _posed(seed, partitions, skew)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    monkeypatch.setattr(
        idle_columns, "can_fill", lambda program: np.zeros(len(program.pools.topic), dtype=bool)
    )
    calls = _recorded(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    found = solve(pooled, setting)
    assert [every for _, every in calls] == [False, True]
    assert calls[0][0] == calls[1][0]
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert all(len(split) == len(set(split)) for split in pooled.pools.split)


@pytest.mark.parametrize(("seed", "partitions", "skew"), CASES)
def test_full_pools_no_broker_can_take_are_ruled_out_by_rows_and_the_program_splits(
    seed: int, partitions: int, skew: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, demands, setting = _posed(seed, partitions, skew)
    # As if rows of no network's kind were posed: rows against full pools, HiGHS solves again.
    monkeypatch.setattr(program_module, "is_network", lambda program: False)
    _without_held(monkeypatch)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    found = solve(pooled, setting)
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert pooled.posed is None
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


def test_where_the_flow_cannot_answer_rows_rule_the_full_pools_out(monkeypatch: pytest.MonkeyPatch) -> None:
    layout, demands, setting = _posed(*CASES[0])
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    monkeypatch.setattr(idle_columns, "network_optimum", lambda *network, **costs: UNSOLVED)
    _without_held(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    found = solve(pooled, setting)
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    # The rows were posed: per fillable pool a column beyond those the program was built with.
    built = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
    program_module.build(built, setting)
    assert len(pooled.upper) > len(built.upper)


def test_on_a_skewed_start_over_three_racks_only_the_pools_that_can_fill_get_columns_per_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On 30k partitions of the three-rack skewed start of `benchmarks/shapes.py` the pooled optimum
    fills pools a broker of each rack cannot take; solved again with columns per idle broker in the
    pools that can fill (under a third of them), the others pooled as they were, it splits and keeps
    what the full program keeps."""
    layout, demands, setting = _three_racks(7)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    calls = _recorded(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True)
    found = solve(pooled, setting)
    assert [every for _, every in calls] == [False]
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert all(len(split) == len(set(split)) for split in pooled.pools.split)


@pytest.mark.parametrize("seed", [7, 11])
def test_on_a_skewed_start_over_three_racks_the_overfull_pools_topics_are_solved_again_alone(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same start: the pools a broker cannot take all of get columns per idle broker and only
    their topics (and some with room beside them) are solved again, every other topic held. That
    keeps what the full program keeps and splits, with no second flow over the whole program."""
    layout, demands, setting = _three_racks(seed)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    held: list[np.ndarray | None] = []
    held_solve = idle_columns.held_per_broker

    def recorded_held(program: ProgramState, *args: object, **relax: bool) -> np.ndarray | None:
        held.append(found := held_solve(program, *args, **relax))  # type: ignore[arg-type]
        return found

    monkeypatch.setattr(program_module, "held_per_broker", recorded_held)
    calls = _recorded_whole(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True)
    found = solve(pooled, setting)
    assert len(held) == 1 and held[0] is not None, (
        "the pooled optimum overfilled a broker; held solve answered"
    )
    assert calls == []
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert all(len(split) == len(set(split)) for split in pooled.pools.split)
    loads = [sum(q[i] for q in found.quotas) for i in range(len(layout.brokers))]
    assert all(lo <= load <= hi for load, (lo, hi) in zip(loads, setting.band, strict=True))


@pytest.mark.parametrize("seed", [3, 11])  # draws whose loose rows' optimum overfills a broker again
def test_an_optimum_solved_again_for_its_loose_rows_that_overfills_a_broker_is_solved_again_too(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At RF 2 and 3 the same start's optimum, once its topics that broke a loose row are solved
    again, overfills a broker again: those pools are solved again too, in the same program, where a
    second program was built before."""
    layout, demands, setting = _three_racks(seed, rfs=(2, 3))
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    programs: list[ProgramState] = []
    again: list[set[int]] = []
    solve_pooled, full_again = balance.solve, program_module._full_pools_again

    def seen(program: ProgramState, posed: Setting) -> Balance | None:
        programs.append(program)
        return solve_pooled(program, posed)

    def recorded(state: ProgramState, solution: np.ndarray, groups: set[int]) -> object:
        again.append(set(groups))
        return full_again(state, solution, groups)

    monkeypatch.setattr(balance, "solve", seen)
    monkeypatch.setattr(program_module, "_full_pools_again", recorded)
    found = balance.assign_extras(layout, demands)
    assert len(programs) == 1 and programs[0].pool
    assert len(again) >= 2, "solved again for full pools after its loose rows were posed"
    assert full is not None and sum(found.kept) == sum(full.kept)


@pytest.mark.parametrize(("seed", "rfs"), [(7, (3,)), (11, (3,)), (7, (1, 2, 3)), (7, (2, 3))])
def test_where_the_overfull_pools_topics_alone_keep_fewer_more_pools_topics_are_solved_again_held(
    seed: int, rfs: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if solving again only the topics of the pools that overfill a broker kept fewer replicas
    (as on a million partitions of the three-rack skewed start at RF 1 to 3): the topics of every
    full pool of those groups are solved again, the rest held, and where that does not split, those
    of every pool a split must give distinct brokers (full, or of several extras). At RF 3 the full
    pools are enough; at RF 1 to 3 and at RF 2 and 3 they are not. Either way the answer keeps what
    the full program keeps and splits, with no flow over the whole widened program."""
    layout, demands, setting = _three_racks(seed, rfs)
    full = solve(ProgramState(layout, demands, room_rows=set()), setting)
    held: list[tuple[str, np.ndarray | None]] = []
    held_solve = idle_columns.held_per_broker

    def overfull_alone_short(program: ProgramState, *args: object, **options: object) -> np.ndarray | None:
        which = str(options.get("which", idle_columns.OVERFULL))
        short = which == idle_columns.OVERFULL
        found = None if short else held_solve(program, *args, **options)  # type: ignore[arg-type]
        held.append((which, found))
        return found

    monkeypatch.setattr(program_module, "held_per_broker", overfull_alone_short)
    calls = _recorded_whole(monkeypatch)
    pooled = ProgramState(layout, demands, room_rows=set(), pool=True)
    found = solve(pooled, setting)
    tried = [which for which, _ in held]
    assert tried[:2] == [idle_columns.OVERFULL, idle_columns.FULL]
    if rfs == (3,):
        assert tried == [idle_columns.OVERFULL, idle_columns.FULL]
    else:
        assert tried[2] == idle_columns.DISTINCT, "full pools alone do not split at mixed RF"
    assert held[-1][1] is not None, "kept as many replicas"
    assert calls == []
    assert found is not None and full is not None and not pooled.unpooled
    assert sum(found.kept) == sum(full.kept)
    assert all(len(split) == len(set(split)) for split in pooled.pools.split)
