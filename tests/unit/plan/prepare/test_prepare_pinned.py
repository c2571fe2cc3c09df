"""Which partitions the balance pass decides replica by replica (is_pinned) or as plain shrinks."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import layout_of, partition

from ferry.model.goal import RackMode
from ferry.plan.prepare.pinned import is_pinned, is_plain_shrink
from ferry.plan.topic_work import Slot

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def slot(replicas: Sequence[int], rf: int, isr: Sequence[int] | None = None) -> Slot:
    return Slot(partition("t", 0, replicas, isr=isr), rf, list(replicas))


@pytest.mark.parametrize("mode", list(RackMode))
def test_more_replicas_than_the_factor_or_a_lowered_factor_pins_a_partition(mode: RackMode) -> None:
    layout = layout_of((1, 1, 1, 1))
    assert is_pinned(2, 3, [1, 1, 1, 0], layout, mode, mixed=False)
    # A lowered factor pins even when the replicas left on targets already fit it.
    assert is_pinned(2, 3, [1, 1, 0, 0], layout, mode, mixed=False)
    assert not is_pinned(3, 3, [1, 1, 0, 0], layout, mode, mixed=False)
    assert not is_pinned(4, 3, [1, 1, 1, 0], layout, mode, mixed=False)


def test_under_strict_a_rack_above_its_upper_bound_pins_the_partition() -> None:
    layout = layout_of((2, 2, 2))  # RF 2: at most one per rack
    assert is_pinned(2, 2, [2, 0, 0], layout, RackMode.STRICT, mixed=False)
    assert not is_pinned(2, 2, [1, 1, 0], layout, RackMode.STRICT, mixed=False)


def test_under_strict_a_rack_above_its_lower_bound_pins_but_one_below_it_does_not() -> None:
    layout = layout_of((3, 3))  # RF 3: each rack one or two
    assert is_pinned(3, 3, [2, 1], layout, RackMode.STRICT, mixed=False)
    assert not is_pinned(3, 3, [1, 1], layout, RackMode.STRICT, mixed=False)
    assert not is_pinned(3, 3, [0, 1], layout, RackMode.STRICT, mixed=False)


def test_in_a_topic_of_mixed_factors_a_partition_owed_by_its_racks_is_pinned() -> None:
    layout = layout_of((2, 2, 2))
    assert not is_pinned(3, 3, [1, 1, 1], layout, RackMode.STRICT, mixed=False)
    assert is_pinned(3, 3, [1, 1, 1], layout, RackMode.STRICT, mixed=True)  # rf = racks: lower bounds 1
    assert not is_pinned(2, 2, [1, 1, 0], layout, RackMode.STRICT, mixed=True)  # no lower bound


@SETTINGS
@given(
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    mixed=st.booleans(),
    data=st.data(),
)
def test_under_even_only_too_many_replicas_or_a_lowered_factor_pin(
    sizes: list[int], mixed: bool, data: st.DataObject
) -> None:
    layout = layout_of(sizes)
    rf = data.draw(st.integers(1, len(layout.brokers)))
    current = data.draw(st.integers(1, len(layout.brokers)))
    counts = [data.draw(st.integers(0, n)) for n in sizes]
    expected = sum(counts) > rf or rf < current
    assert is_pinned(rf, current, counts, layout, RackMode.EVEN, mixed=mixed) == expected
    # Strict pins at least what even pins.
    if expected:
        assert is_pinned(rf, current, counts, layout, RackMode.STRICT, mixed=mixed)


@SETTINGS
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_under_strict_an_unpinned_partition_keeps_every_replica_and_still_completes_within_bounds(
    sizes: list[int], data: st.DataObject
) -> None:
    layout = layout_of(sizes)
    rf = data.draw(st.integers(1, len(layout.brokers)))
    counts = [data.draw(st.integers(0, n)) for n in sizes]
    if is_pinned(rf, rf, counts, layout, RackMode.STRICT, mixed=False):
        return
    bounds = layout.bounds(rf)
    assert any(
        sum(f) == rf and all(f_k >= c for f_k, c in zip(f, counts, strict=True))
        for f in product(*(range(lo, hi + 1) for lo, hi in bounds))
    )


def test_a_plain_shrink_has_more_replicas_than_its_factor() -> None:
    layout = layout_of((1, 1, 1, 1))
    assert is_plain_shrink(slot([0, 1, 2], 2), layout, RackMode.STRICT)
    assert not is_plain_shrink(slot([0, 1], 2), layout, RackMode.STRICT)
    assert not is_plain_shrink(slot([0, 1], 2), layout, RackMode.EVEN)


def test_a_plain_shrink_has_no_replica_preferred_for_being_in_sync() -> None:
    layout = layout_of((1, 1, 1, 1))
    assert is_plain_shrink(slot([0, 1, 2], 2, isr=[0, 1, 2]), layout, RackMode.EVEN)
    assert is_plain_shrink(slot([0, 1, 2], 2, isr=[]), layout, RackMode.EVEN)
    assert not is_plain_shrink(slot([0, 1, 2], 2, isr=[0, 1]), layout, RackMode.EVEN)
    assert not is_plain_shrink(slot([0, 1, 2], 2, isr=[2]), layout, RackMode.STRICT)


def test_under_strict_a_plain_shrink_meets_the_rack_rule_whichever_replicas_stay() -> None:
    spread = layout_of((2, 2, 2, 2))  # RF 2 over four racks: no lower bound, one per rack
    assert is_plain_shrink(slot([0, 2, 4], 2), spread, RackMode.STRICT)
    assert not is_plain_shrink(slot([0, 1, 4], 2), spread, RackMode.STRICT)  # r0 above its one
    assert is_plain_shrink(slot([0, 1, 4], 2), spread, RackMode.EVEN)
    owed = layout_of((2, 2, 2))  # RF 4: each rack one or two, so dropping r2's only replica breaks it
    assert owed.counts([0, 1, 2, 3, 4]) == [2, 2, 1]
    assert not is_plain_shrink(slot([0, 1, 2, 3, 4], 4), owed, RackMode.STRICT)
    assert is_plain_shrink(slot([0, 1, 2, 3, 4], 4), owed, RackMode.EVEN)
