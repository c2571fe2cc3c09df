"""The forced spread equals the smallest spread of every rack-legal placement, counted by brute force."""

from __future__ import annotations

from collections import Counter
from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.balance.least_spread import forced_spread
from ferry.plan.balance.rack_totals import shares
from ferry.plan.racks import RackLayout, rack_bounds


def brute_force(sizes: tuple[int, ...], rfs: list[int]) -> int:
    """Every way to put each partition's replicas into racks within its bounds; brokers inside a rack
    as even as can be, so a rack of ``n`` holding ``T`` gives loads ``floor(T/n)`` and ``ceil(T/n)``."""
    options = {
        rf: [c for c in product(*(range(lo, hi + 1) for lo, hi in rack_bounds(sizes, rf))) if sum(c) == rf]
        for rf in set(rfs)
    }
    best = None
    for choice in product(*(options[rf] for rf in rfs)):
        totals = [sum(c[k] for c in choice) for k in range(len(sizes))]
        spread = max(-(-t // n) for t, n in zip(totals, sizes, strict=True)) - min(
            t // n for t, n in zip(totals, sizes, strict=True)
        )
        best = spread if best is None else min(best, spread)
    return best or 0


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    rfs=st.lists(st.integers(1, 4), min_size=1, max_size=5),
)
def test_the_forced_spread_is_the_smallest_any_placement_has(sizes: list[int], rfs: list[int]) -> None:
    rfs = [min(rf, sum(sizes)) for rf in rfs]
    brokers = [b for k, n in enumerate(sizes) for b in range(sum(sizes[:k]), sum(sizes[:k]) + n)]
    racks = {b: f"r{k}" for k, n in enumerate(sizes) for b in brokers[sum(sizes[:k]) : sum(sizes[:k]) + n]}
    layout = RackLayout.of(racks, brokers)
    result = forced_spread(layout, Counter(rfs))
    assert result.spread == brute_force(layout.sizes, rfs)
    assert sum(result.totals) == sum(rfs)


def test_three_racks_of_three_three_and_two_carry_one_replica_of_every_partition_each() -> None:
    layout = RackLayout.of({b: f"r{b % 3}" for b in range(8)}, range(8))  # racks of 3, 3 and 2
    result = forced_spread(layout, {3: 3000})
    assert result.totals == (3000, 3000, 3000)
    assert result.spread == 3000 // 2 - 3000 // 3


@settings(max_examples=200, deadline=None)
@given(
    totals=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    count=st.integers(1, 9),
)
def test_shares_add_up_and_stay_within_one_per_rack(totals: list[int], count: int) -> None:
    # Make the totals divisible into items of equal replicas, as rack totals of alike topics are.
    totals[0] += (-sum(totals)) % count
    each = sum(totals) // count
    rows = shares(totals, count, each)
    assert all(sum(row) == each for row in rows)
    for k, t in enumerate(totals):
        column = [row[k] for row in rows]
        assert sum(column) == t and max(column) - min(column) <= 1
