"""The smallest spread the rack rule allows (ferry.plan.balance.least_spread): the totals it answers reach
that spread, stay as near a wish as it allows, add up per kind, and keep the leaders' cap."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.balance.least_spread import Kind, RackTotals, forced_spread, least_spread
from ferry.plan.racks import RackLayout, rack_bounds


def spread_of(totals: tuple[int, ...], sizes: tuple[int, ...]) -> int:
    pairs = list(zip(totals, sizes, strict=True))
    return max(-(-t // n) for t, n in pairs) - min(t // n for t, n in pairs)


def legal_totals(sizes: tuple[int, ...], rfs: list[int]) -> set[tuple[int, ...]]:
    """Every per-rack total some placement of partitions of factors ``rfs`` reaches, by brute force."""
    options = [
        [c for c in product(*(range(lo, hi + 1) for lo, hi in rack_bounds(sizes, rf))) if sum(c) == rf]
        for rf in rfs
    ]
    return {tuple(map(sum, zip(*choice, strict=True))) for choice in product(*options)}


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.integers(1, 3), min_size=2, max_size=3).map(tuple),
    rfs=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    wish=st.lists(st.integers(0, 12), min_size=3, max_size=3),
)
def test_the_totals_reach_the_smallest_spread_as_near_the_wish_as_any_legal_totals_at_it(
    sizes: tuple[int, ...], rfs: list[int], wish: list[int]
) -> None:
    rfs = [min(rf, sum(sizes)) for rf in rfs]
    near = [min(w, sum(rfs)) for w in wish[: len(sizes)]]  # a rack wishes for no more than every replica
    racks = [f"r{k}" for k, n in enumerate(sizes) for _ in range(n)]
    layout = RackLayout.of(dict(enumerate(racks)), range(len(racks)))
    result = forced_spread(layout, {rf: rfs.count(rf) for rf in set(rfs)}, near)
    legal = legal_totals(sizes, rfs)
    assert result.totals in legal and spread_of(result.totals, sizes) == result.spread

    def distance(totals: tuple[int, ...]) -> int:
        return sum(abs(a - b) for a, b in zip(totals, near, strict=True))

    assert distance(result.totals) == min(distance(t) for t in legal if spread_of(t, sizes) == result.spread)
    # The lowest broker load is that of the emptiest rack: the spread counts up from it.
    assert result.low == min(t // n for t, n in zip(result.totals, sizes, strict=True))
    assert forced_spread(layout, {rfs[0]: 0}) == RackTotals(0, 0, (0,) * len(sizes))  # nothing to place


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple),
    counts=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 9)), min_size=1, max_size=4),
)
def test_each_kinds_totals_add_up_within_its_bounds_and_sum_to_the_racks(
    sizes: tuple[int, ...], counts: list[tuple[int, int]]
) -> None:
    kinds = [Kind(rf, n, rack_bounds(sizes, rf)) for rf, n in counts]
    result = least_spread(sizes, kinds)
    assert len(result.per_kind) == len(kinds)
    for kind, row in zip(kinds, result.per_kind, strict=True):
        assert sum(row) == kind.each * kind.count
        assert all(
            kind.count * lo <= v <= kind.count * hi for v, (lo, hi) in zip(row, kind.bounds, strict=True)
        )
    assert tuple(map(sum, zip(*result.per_kind, strict=True))) == result.totals


def test_single_replica_kinds_keep_under_the_leaders_cap_and_may_widen_the_spread() -> None:
    sizes, bounds = (1, 3), rack_bounds((1, 3), 1)
    free = least_spread(sizes, [Kind(1, 8, bounds, led=True)])
    assert (free.spread, free.totals) == (0, (2, 6))
    capped = least_spread(sizes, [Kind(1, 8, bounds, led=True)], lead_cap=[1, 7])
    assert (capped.spread, capped.totals) == (2, (1, 7))  # loads 1 | 2, 2, 3
    assert least_spread(sizes, [Kind(1, 8, bounds)], lead_cap=[1, 7]).totals == (2, 6)  # led kinds only
    with pytest.raises(RuntimeError, match="admit no placement"):
        least_spread((1, 1), [Kind(3, 1, ((0, 1), (0, 1)))])  # three replicas, room for two
