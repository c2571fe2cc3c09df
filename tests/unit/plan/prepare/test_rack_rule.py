"""The one rack rule: RackLayout, the per-partition rack bounds, may_take and racks_open."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import layout_of

from ferry.model.goal import RackMode
from ferry.plan.racks import RackLayout, may_take, rack_bounds, racks_open

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def legal(bounds: tuple[tuple[int, int], ...], rf: int) -> list[tuple[int, ...]]:
    """Every per-rack count vector of a whole partition that the bounds allow."""
    return [f for f in product(*(range(lo, hi + 1) for lo, hi in bounds)) if sum(f) == rf]


@st.composite
def partial_partitions(draw: st.DrawFn) -> tuple[RackLayout, int, list[int]]:
    """A layout, a replication factor and a rack-clean partial replica set (fewer than rf replicas,
    no rack above its upper bound), built without asking the rule under test."""
    layout = layout_of(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    rf = draw(st.integers(1, len(layout.brokers)))
    picked = draw(st.lists(st.sampled_from(layout.brokers), unique=True, max_size=rf - 1))
    seen = [0] * len(layout.members)
    replicas = []
    for b in picked:
        k = layout.rack_of[b]
        if seen[k] < layout.bounds(rf)[k][1]:
            seen[k] += 1
            replicas.append(b)
    return layout, rf, replicas


def test_layout_keeps_only_targets_sorted_with_racks_in_name_order() -> None:
    layout = RackLayout.of({1: "b", 2: "a", 3: "b", 4: "a", 5: "c"}, [4, 3, 1, 2, 3])
    assert layout.brokers == (1, 2, 3, 4)
    assert layout.names == ("a", "b")  # rack c has no target broker
    assert layout.members == ((2, 4), (1, 3))
    assert layout.sizes == (2, 2)
    assert [layout.position[b] for b in layout.brokers] == [0, 1, 2, 3]
    assert layout.rack_at == tuple(layout.rack_of[b] for b in layout.brokers) == (1, 0, 1, 0)


def test_a_broker_without_a_rack_is_a_rack_of_its_own() -> None:
    layout = RackLayout.of({1: None, 2: None, 3: "a", 4: "a"}, [1, 2, 3, 4])
    assert sorted(layout.sizes) == [1, 1, 2]
    assert layout.rack_of[1] != layout.rack_of[2]
    assert layout.rack_of[3] == layout.rack_of[4]


@pytest.mark.parametrize("sizes", [(1, 1, 1), (3, 1, 2), (4, 4, 4)])
def test_with_as_many_racks_as_the_replication_factor_every_rack_holds_exactly_one(
    sizes: tuple[int, ...],
) -> None:
    assert rack_bounds(sizes, len(sizes)) == ((1, 1),) * len(sizes)


def test_more_racks_hold_at_most_one_each_and_fewer_cap_a_small_rack_while_a_big_one_takes_the_rest() -> None:
    assert rack_bounds((2, 3, 1, 5), 3) == ((0, 1),) * 4
    assert rack_bounds((3, 3), 3) == ((1, 2), (1, 2))
    assert rack_bounds((1, 4), 4) == ((1, 1), (3, 3))
    assert rack_bounds((5,), 3) == ((3, 3),)


def test_a_replication_factor_above_the_target_brokers_is_refused() -> None:
    with pytest.raises(ValueError, match="exceeds the 3 target brokers"):
        rack_bounds((2, 1), 4)


@SETTINGS
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_rack_bounds_follow_the_smallest_even_cap_and_every_bound_is_reached(
    sizes: list[int], data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, sum(sizes)))
    bounds = rack_bounds(tuple(sizes), rf)
    c = min(c for c in range(1, rf + 1) if sum(min(n, c) for n in sizes) >= rf)
    assert [hi for _, hi in bounds] == [min(n, c) for n in sizes]
    assert all(min(n, c - 1) <= lo <= hi <= n for n, (lo, hi) in zip(sizes, bounds, strict=True))
    assert sum(lo for lo, _ in bounds) <= rf <= sum(hi for _, hi in bounds)
    # The lows reach rf only where they fix every rack (e.g. as many racks as rf: one each).
    if sum(lo for lo, _ in bounds) == rf:
        assert all(lo == hi for lo, hi in bounds)
    # Tight: each rack's lower and upper bound is met by some whole partition within all bounds.
    whole = legal(bounds, rf)
    for k, (lo, hi) in enumerate(bounds):
        assert any(f[k] == lo for f in whole) and any(f[k] == hi for f in whole)


def test_bounds_under_even_owe_nothing_and_cap_at_the_rack_size() -> None:
    layout = layout_of((1, 3, 3))
    assert layout.bounds_under(3, RackMode.EVEN) == ((0, 1), (0, 3), (0, 3))
    assert layout.bounds_under(2, RackMode.EVEN) == ((0, 1), (0, 2), (0, 2))
    assert layout.bounds_under(3, RackMode.STRICT) == layout.bounds(3) == ((1, 1), (1, 1), (1, 1))


def test_counts_violations_and_outside_measure_a_replica_set_against_its_bounds() -> None:
    layout = layout_of((2, 2, 2))  # r0: 0 1, r1: 2 3, r2: 4 5
    assert layout.counts([0, 1, 2]) == [2, 1, 0]
    assert layout.violations([0, 1, 2]) == 1  # r0 above its one
    assert layout.outside([0, 1, 2]) == 2  # and r2 short of its one
    assert layout.violations([0, 2, 4]) == layout.outside([0, 2, 4]) == 0
    # Replicas off the targets are left out; the factor defaults to the replicas on targets.
    assert layout.violations([0, 1, 99]) == 1
    assert layout.violations([0, 1, 99], rf=3) == 1
    assert layout.violations([0, 2, 99], rf=3) == 0
    assert layout.outside([0, 2]) == 0  # RF 2 over three racks owes no rack anything


def test_base_by_rack_sums_a_per_broker_value_over_each_rack() -> None:
    layout = RackLayout.of({1: "b", 2: "a", 3: "b", 4: "a", 5: "c"}, [1, 2, 3, 4, 5])
    assert layout.base_by_rack((1, 10, 100, 1000, 7)) == (10 + 1000, 1 + 100, 7)


def test_a_second_replica_in_a_full_rack_is_refused_under_strict_and_allowed_under_even() -> None:
    layout = layout_of((1, 3, 3))  # r0: 0, r1: 1 2 3, r2: 4 5 6
    assert not may_take(layout, RackMode.STRICT, [1], 3, 2)
    assert may_take(layout, RackMode.EVEN, [1], 3, 2)
    assert may_take(layout, RackMode.STRICT, [1], 3, 4)


def test_strict_keeps_the_last_slot_for_a_rack_still_owed_a_replica() -> None:
    layout = layout_of((1, 2, 2))  # r0: 0, r1: 1 2, r2: 3 4; RF 4 gives r0 one and the others one or two
    assert layout.bounds(4) == ((1, 1), (1, 2), (1, 2))
    assert not may_take(layout, RackMode.STRICT, [1, 3, 4], 4, 2)  # r1 is below its upper bound, but
    assert may_take(layout, RackMode.STRICT, [1, 3, 4], 4, 0)  # the last slot belongs to r0
    assert may_take(layout, RackMode.EVEN, [1, 3, 4], 4, 2)
    assert racks_open(layout, RackMode.STRICT, 4, [0, 1, 1]) == [True, True, True]
    assert racks_open(layout, RackMode.STRICT, 4, [0, 1, 2]) == [True, False, False]


def test_strict_refuses_a_replica_beyond_the_replication_factor() -> None:
    layout = layout_of((2, 2, 2))
    assert not any(may_take(layout, RackMode.STRICT, [0, 2], 2, b) for b in (1, 3, 4, 5))


@pytest.mark.parametrize("mode", list(RackMode))
def test_may_take_refuses_a_broker_that_already_holds_the_partition(mode: RackMode) -> None:
    layout = layout_of((1, 1, 1, 1))
    assert not may_take(layout, mode, [0, 1], 3, 1)
    assert may_take(layout, mode, [0, 1], 3, 1, without=1)  # it may take back the one it leaves


@SETTINGS
@given(partial_partitions())
def test_racks_open_is_exactly_whether_the_partition_can_still_be_completed_within_bounds(
    case: tuple[RackLayout, int, list[int]],
) -> None:
    layout, rf, replicas = case
    bounds = layout.bounds(rf)
    counts = layout.counts(replicas)
    completions = legal(bounds, rf)
    expected = [
        any(all(f[j] >= counts[j] + (j == k) for j in range(len(counts))) for f in completions)
        for k in range(len(counts))
    ]
    assert racks_open(layout, RackMode.STRICT, rf, counts) == expected
    assert racks_open(layout, RackMode.EVEN, rf, counts) == [True] * len(counts)
    for mode in RackMode:
        opened = racks_open(layout, mode, rf, counts)
        for b in layout.brokers:
            assert may_take(layout, mode, replicas, rf, b) == (
                b not in replicas and opened[layout.rack_of[b]]
            )


@SETTINGS
@given(
    layout=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(layout_of),
    mode=st.sampled_from(RackMode),
    data=st.data(),
)
def test_may_take_without_a_replica_is_may_take_on_the_replicas_left(
    layout: RackLayout, mode: RackMode, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(layout.brokers)))
    replicas = data.draw(st.lists(st.sampled_from(layout.brokers), unique=True, min_size=1, max_size=rf))
    leaving = data.draw(st.sampled_from(replicas))
    left = [b for b in replicas if b != leaving]
    for b in layout.brokers:
        assert may_take(layout, mode, replicas, rf, b, without=leaving) == may_take(layout, mode, left, rf, b)
        # Strict only ever narrows what even allows.
        assert may_take(layout, mode, left, rf, b) <= may_take(layout, RackMode.EVEN, left, rf, b)


@SETTINGS
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=5), data=st.data())
def test_placing_replica_by_replica_under_strict_never_dead_ends_and_ends_rack_clean(
    sizes: list[int], data: st.DataObject
) -> None:
    layout = layout_of(sizes)
    rf = data.draw(st.integers(1, len(layout.brokers)))
    replicas: list[int] = []
    while len(replicas) < rf:
        allowed = [b for b in layout.brokers if may_take(layout, RackMode.STRICT, replicas, rf, b)]
        assert allowed, f"stuck at {replicas} of RF {rf} over racks {layout.sizes}"
        replicas.append(data.draw(st.sampled_from(allowed)))
    assert layout.outside(replicas) == layout.violations(replicas) == 0


@SETTINGS
@given(layout=st.integers(1, 6).map(lambda n: RackLayout.of({}, range(n))), data=st.data())
def test_without_rack_information_strict_is_only_never_two_replicas_on_one_broker(
    layout: RackLayout, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(layout.brokers)))
    replicas = data.draw(st.lists(st.sampled_from(layout.brokers), unique=True, max_size=rf - 1))
    for b in layout.brokers:
        assert may_take(layout, RackMode.STRICT, replicas, rf, b) == (b not in replicas)
