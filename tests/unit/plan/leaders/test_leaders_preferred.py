"""Preferred leaders: every broker leads floor(P/B) or ceil(P/B) partitions where the replicas allow
it, and current leaders stay where that costs no balance."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.leaders import preferred
from ferry.plan.leaders.preferred import choose_leaders

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)
GONE = 99
"""A current leader that is no longer a replica."""


def _even(leaders: Sequence[int], brokers: Sequence[int]) -> bool:
    low, extra = divmod(len(leaders), len(brokers))
    led = Counter(leaders)
    return all(low <= led[b] <= low + (extra > 0) for b in brokers)


def _even_reachable(replicas: Sequence[Sequence[int]], brokers: Sequence[int]) -> bool:
    """Brute force over every leader choice (the inputs stay small)."""
    return any(_even(choice, brokers) for choice in itertools.product(*replicas))


@st.composite
def partitions(draw: st.DrawFn) -> tuple[list[list[int]], list[int | None], list[int]]:
    brokers = list(range(draw(st.integers(1, 4))))
    count = draw(st.integers(0, 7))
    replica_sets = st.lists(st.sampled_from(brokers), min_size=1, max_size=3, unique=True)
    replicas = draw(st.lists(replica_sets, min_size=count, max_size=count))
    current = [draw(st.sampled_from([None, GONE, *reps])) for reps in replicas]
    return replicas, current, brokers


@SETTINGS
@given(partitions())
def test_every_broker_leads_floor_or_ceil_whenever_the_replicas_allow_it(
    case: tuple[list[list[int]], list[int | None], list[int]],
) -> None:
    replicas, current, brokers = case
    leaders = choose_leaders(replicas, current, brokers)
    assert len(leaders) == len(replicas)
    assert all(leader in reps for leader, reps in zip(leaders, replicas, strict=True))
    assert _even(leaders, brokers) == _even_reachable(replicas, brokers)


@SETTINGS
@given(partitions())
def test_current_leaders_that_are_already_even_stay(
    case: tuple[list[list[int]], list[int | None], list[int]],
) -> None:
    replicas, _, brokers = case
    # Each partition currently led by its last replica: keep exactly that when it is even.
    current: list[int | None] = [reps[-1] for reps in replicas]
    leaders = choose_leaders(replicas, current, brokers)
    if _even([reps[-1] for reps in replicas], brokers):
        assert leaders == current
    else:
        assert _even(leaders, brokers) == _even_reachable(replicas, brokers)


def test_a_current_leader_stays_unless_its_broker_leads_too_many() -> None:
    replicas = [[0, 1], [0, 1], [0, 2], [0, 1], [2, 0], [2, 1]]
    # Broker 0 leads four, 2 leads two; one of 0's goes to 1 (which otherwise leads nothing)...
    current = [0, 0, 0, 0, 2, 2]
    leaders = choose_leaders(replicas, current, [0, 1, 2])
    assert Counter(leaders) == Counter({0: 2, 1: 2, 2: 2})
    # ...and the fewest leaderships change: two of broker 0's, none of broker 2's.
    assert sum(a != b for a, b in zip(leaders, current, strict=True)) == 2
    assert leaders[4:] == [2, 2]


def test_a_partition_without_a_usable_current_leader_gets_the_replica_leading_fewest() -> None:
    replicas = [[0, 1], [1, 0], [1, 2]]
    leaders = choose_leaders(replicas, [0, None, GONE], [0, 1, 2])
    assert leaders == [0, 1, 2]


def test_leadership_shifts_along_a_chain_to_a_broker_that_only_a_chain_reaches() -> None:
    # Broker 2 is a replica of one partition only, led by 1; broker 1 must pass that on and take
    # one of broker 0's two partitions instead.
    replicas = [[0, 1], [0], [1, 2]]
    leaders = choose_leaders(replicas, [0, 0, 1], [0, 1, 2])
    assert leaders == [1, 0, 2]


def test_a_broker_holding_no_replica_leads_nothing_and_the_rest_stay_close() -> None:
    replicas = [[0, 1], [0, 1], [1, 0], [0, 1]]
    leaders = choose_leaders(replicas, [0, 0, 0, 0], [0, 1, 2])
    assert Counter(leaders) == Counter({0: 2, 1: 2})


def test_no_partitions_no_leaders() -> None:
    assert choose_leaders([], [], [0, 1]) == []


def test_the_partitions_each_broker_leads_stay_in_ascending_order_across_pushes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The push's search walks them in order, so a list kept out of order would pick other paths.
    kept, pushes = preferred._push, []

    def push(*args: Any) -> bool:
        source, _, leaders, led, led_by, _ = args
        assert led_by == {b: [p for p, x in enumerate(leaders) if x == b] for b in led}
        pushes.append(source)
        return kept(*args)

    monkeypatch.setattr(preferred, "_push", push)
    rnd = random.Random(7)
    for _ in range(300):
        brokers = list(range(rnd.randint(3, 6)))
        replicas = [rnd.sample(brokers, rnd.randint(1, 3)) for _ in range(rnd.randint(5, 30))]
        # Most partitions led by a replica low in the list: leadership piles up on a few brokers.
        current = [min(reps) if rnd.random() < 0.8 else rnd.choice(reps) for reps in replicas]
        preferred.choose_leaders(replicas, current, brokers)
    assert len(pushes) > 20


def _reachable(replicas: Sequence[Sequence[int]], leaders: Sequence[int], start: Sequence[int]) -> set[int]:
    """Brokers a leadership can be passed to from ``start``, along partitions their leaders lead."""
    seen, todo = set(start), list(start)
    while todo:
        broker = todo.pop()
        for p, leader in enumerate(leaders):
            if leader == broker:
                fresh = set(replicas[p]) - seen
                seen |= fresh
                todo.extend(fresh)
    return seen


@pytest.mark.parametrize("seed", range(40))
def test_the_lift_leaves_no_short_broker_that_a_spare_leadership_could_still_reach(seed: int) -> None:
    # No path from a broker leading more than the floor to one leading less: no pass of leadership
    # could lift another broker, so as many are lifted as can be. Skewed leaders and sparse
    # replicas make the paths long and several phases necessary.
    rnd = random.Random(seed)
    brokers = list(range(rnd.randint(4, 25)))
    replicas = [rnd.sample(brokers, rnd.choice([1, 1, 2, 2, 3])) for _ in range(rnd.randint(10, 300))]
    leaders = [min(reps) if rnd.random() < 0.7 else rnd.choice(reps) for reps in replicas]
    led = {b: leaders.count(b) for b in brokers}
    low = len(leaders) // len(brokers)
    was = dict(led)
    led_by = preferred.leading(leaders, brokers)
    preferred._lift(replicas, leaders, led, preferred.holders(replicas, brokers), led_by, low)
    assert led == {b: leaders.count(b) for b in brokers}
    # The partitions each broker leads, kept through the lift in ascending order (the pushes after
    # it walk them in order).
    assert led_by == preferred.leading(leaders, brokers)
    assert all(leader in reps for leader, reps in zip(leaders, replicas, strict=True))
    assert all(led[b] >= min(was[b], low) for b in brokers)
    assert all(led[b] <= max(was[b], low) for b in brokers)
    spare = [b for b in brokers if led[b] > low]
    assert not _reachable(replicas, leaders, spare) & {b for b in brokers if led[b] < low}
