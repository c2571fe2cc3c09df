"""Replica swaps that make an even leader spread reachable: only free ones, never breaking the rack
rule, never widening a topic's or the cluster's replica spread."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.builders import partition
from support.invariants import rack_caps

from ferry.model import PartitionState
from ferry.plan.leaders import swaps
from ferry.plan.leaders.preferred import choose_leaders, holders
from ferry.plan.leaders.swaps import _Swap, leaders_with_swaps
from ferry.plan.racks import RackLayout

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _spread(values: Iterable[int], brokers: Sequence[int]) -> int:
    counts = Counter(values)
    return max(counts[b] for b in brokers) - min(counts[b] for b in brokers)


def _moves(states: Sequence[PartitionState], replicas: Sequence[Sequence[int]]) -> int:
    return sum(len(set(reps) - set(s.replicas)) for s, reps in zip(states, replicas, strict=True))


def _docstring_case(racks: dict[int, str | None]) -> tuple[list[PartitionState], list[list[int]], RackLayout]:
    # The module's example: t0 = [1], [0]; t1 = [2, 3], [0, 1], where t1's replicas on 3 and on 1
    # are new (they came from brokers 9 and 8), so trading them costs nothing.
    states = [
        partition("t0", 0, [1]),
        partition("t0", 1, [0]),
        partition("t1", 0, [2, 9]),
        partition("t1", 1, [0, 8]),
    ]
    return states, [[1], [0], [2, 3], [0, 1]], RackLayout.of(racks, range(4))


def test_a_free_swap_within_a_topic_gives_every_broker_one_leadership() -> None:
    states, replicas, layout = _docstring_case({})
    assert _spread(choose_leaders(replicas, [s.current_leader for s in states], range(4)), range(4)) == 2
    before = [list(r) for r in replicas]
    leaders = leaders_with_swaps(states, replicas, layout)
    assert sorted(leaders) == [0, 1, 2, 3]
    assert all(leader in reps for leader, reps in zip(leaders, replicas, strict=True))
    assert replicas != before
    # A swap within the topic: each broker holds as many of every topic as before, and no move more.
    for topic in ("t0", "t1"):
        mine = [i for i, s in enumerate(states) if s.tp.topic == topic]
        assert Counter(b for i in mine for b in replicas[i]) == Counter(b for i in mine for b in before[i])
    assert _moves(states, replicas) == _moves(states, before)


def test_no_swap_is_taken_when_it_would_cost_a_move() -> None:
    states, replicas, layout = _docstring_case({})
    # The same replicas, all already in place: any trade now moves two more replicas.
    states = [partition(s.tp.topic, s.tp.partition, reps) for s, reps in zip(states, replicas, strict=True)]
    leaders = leaders_with_swaps(states, replicas, layout)
    assert replicas == [[1], [0], [2, 3], [0, 1]]
    assert _spread(leaders, range(4)) == 2


def test_no_swap_is_taken_when_it_would_put_two_replicas_in_one_rack() -> None:
    # Racks a = {0, 3}, b = {1, 2}: the free trade gives t1 [2, 1] and [0, 3], both in one rack.
    states, replicas, layout = _docstring_case({0: "a", 3: "a", 1: "b", 2: "b"})
    leaders_with_swaps(states, replicas, layout)
    assert replicas == [[1], [0], [2, 3], [0, 1]]


@dataclass
class Case:
    states: list[PartitionState]
    replicas: list[list[int]]
    layout: RackLayout
    members: list[list[int]]


@st.composite
def plans(draw: st.DrawFn) -> Case:
    """2-6 target brokers in 0-3 racks, 1-3 topics; each partition was on targets and two spare
    brokers, and its planned replicas keep some target ones and take new ones."""
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(2, 6))
    rack_count = draw(st.integers(0, 3))
    racks = {b: f"r{rnd.randrange(rack_count)}" if rack_count else None for b in range(n)}
    states, replicas = [], []
    for t in range(draw(st.integers(1, 3))):
        rf = rnd.randint(1, min(3, n))
        for p in range(rnd.randint(1, 6)):
            original = rnd.sample(range(n + 2), rf)
            planned = [b if b < n and rnd.random() < 0.7 else None for b in original]
            for i, b in enumerate(planned):
                if b is None:
                    planned[i] = rnd.choice([x for x in range(n) if x not in planned])
            states.append(partition(f"t{t}", p, original, leader=rnd.choice(original)))
            replicas.append([b for b in planned if b is not None])
    keys = {b: racks[b] or f"b{b}" for b in range(n)}
    members = [[b for b in range(n) if keys[b] == name] for name in sorted(set(keys.values()))]
    return Case(states, replicas, RackLayout.of(racks, range(n)), members)


def _within_caps(replicas: Sequence[int], members: list[list[int]]) -> bool:
    _, caps = rack_caps([len(m) for m in members], len(replicas))
    return all(lo <= sum(b in m for b in replicas) <= hi for m, (lo, hi) in zip(members, caps, strict=True))


@SETTINGS
@given(plans())
def test_swaps_never_add_a_move_break_the_rack_rule_or_widen_a_spread(case: Case) -> None:
    states, layout, brokers = case.states, case.layout, case.layout.brokers
    before = [list(r) for r in case.replicas]
    first = choose_leaders(before, [s.current_leader for s in states], brokers)
    leaders = leaders_with_swaps(states, case.replicas, layout)
    after = case.replicas
    assert all(leader in reps for leader, reps in zip(leaders, after, strict=True))
    assert _spread(leaders, brokers) <= _spread(first, brokers)
    assert _moves(states, after) <= _moves(states, before)
    for old, new in zip(before, after, strict=True):
        assert len(new) == len(set(new)) == len(old)
        assert set(new) <= set(brokers)
        assert layout.outside(new) <= layout.outside(old)
        if _within_caps(old, case.members):
            assert _within_caps(new, case.members)
    total = _spread((b for r in after for b in r), brokers)
    assert total <= max(1, _spread((b for r in before for b in r), brokers))
    for topic in {s.tp.topic for s in states}:
        mine = [i for i, s in enumerate(states) if s.tp.topic == topic]
        was = _spread((b for i in mine for b in before[i]), brokers)
        assert _spread((b for i in mine for b in after[i]), brokers) <= max(1, was)
    if _spread(first, brokers) <= 1:
        assert after == before
        assert leaders == first


def _checked_holders(case: Case) -> list[_Swap]:
    """Run the swaps with the holders they keep compared, after every swap, with those built afresh
    from the replicas as they stand (order included: the leader pass walks them in order)."""
    kept, taken = swaps._hold, []

    def hold(holding: dict[int, list[int]], swap: _Swap) -> None:
        kept(holding, swap)
        assert holding == holders(case.replicas, case.layout.brokers)
        taken.append(swap)

    swaps._hold = hold
    try:
        leaders_with_swaps(case.states, case.replicas, case.layout)
    finally:
        swaps._hold = kept
    return taken


def test_the_holders_kept_across_swaps_are_those_of_the_replicas() -> None:
    states, replicas, layout = _docstring_case({b: None for b in range(4)})
    assert _checked_holders(Case(states, replicas, layout, [[b] for b in range(4)]))  # it swapped


@SETTINGS
@given(plans())
def test_the_holders_kept_across_swaps_match_the_replicas_on_random_plans(case: Case) -> None:
    _checked_holders(case)


def _docstring_case_twice() -> tuple[list[PartitionState], list[list[int]], RackLayout]:
    """The module's example on brokers 0-3 and again, with other topics, on brokers 4-7."""
    states, replicas, _ = _docstring_case({})
    again = [
        partition(f"u{s.tp.topic}", s.tp.partition, [b + 4 if b < 4 else b + 10 for b in s.replicas])
        for s in states
    ]
    return states + again, replicas + [[b + 4 for b in r] for r in replicas], RackLayout.of({}, range(8))


def test_one_round_makes_every_swap_the_leaders_need_before_one_leader_pass() -> None:
    states, replicas, layout = _docstring_case_twice()
    first = choose_leaders(replicas, [s.current_leader for s in states], layout.brokers)
    assert _spread(first, layout.brokers) == 2
    before = [list(r) for r in replicas]
    made, some = [], swaps._swap_some

    def counted(*args: Any) -> int:
        made.append(some(*args))
        return made[-1]

    swaps._swap_some = counted
    try:
        leaders = leaders_with_swaps(states, replicas, layout)
    finally:
        swaps._swap_some = some
    # Brokers 3 and 7 each lacked a leadership: both swaps in the first round, each to one of them.
    assert made == [2]
    assert sorted(leaders) == list(range(8))
    assert _moves(states, replicas) == _moves(states, before)


def test_a_round_gives_each_short_broker_one_leadership_before_any_a_second() -> None:
    # Brokers 0 and 3 hold nothing: each takes one partition's new replica (a relocation). Handing
    # broker 0 a second one first would change one partition more for nothing.
    states = [
        partition("t0", 0, [4], leader=4),
        partition("t0", 1, [0], leader=0),
        partition("t1", 0, [6, 5], leader=6),
        partition("t1", 1, [1, 6], leader=1),
        partition("t1", 2, [4, 2], leader=4),
    ]
    replicas = [[4], [2], [2, 1], [1, 2], [4, 2]]
    before = [list(r) for r in replicas]
    leaders = leaders_with_swaps(states, replicas, RackLayout.of({}, range(5)))
    assert sorted(leaders) == list(range(5))
    assert sum(new != old for new, old in zip(replicas, before, strict=True)) == 2
    assert _moves(states, replicas) == _moves(states, before)
