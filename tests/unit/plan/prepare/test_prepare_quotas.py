"""Per-topic quotas: water filling under the rack rule, fixed rack totals and the water level."""

from __future__ import annotations

from itertools import combinations_with_replacement, product

from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import layout_of

from ferry.model.goal import RackMode
from ferry.plan.prepare.quotas import TopicQuota, fixed_quota, topic_quota, water_level
from ferry.plan.racks import RackLayout

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


@st.composite
def topics(draw: st.DrawFn, uniform: bool = False) -> tuple[RackLayout, list[int]]:
    """A layout and the replication factors of one topic's partitions."""
    layout = layout_of(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    factor = st.integers(1, min(5, len(layout.brokers)))
    if uniform:
        return layout, [draw(factor)] * draw(st.integers(1, 4))
    return layout, draw(st.lists(factor, min_size=1, max_size=6))


def rack_base(layout: RackLayout, quota: TopicQuota) -> list[int]:
    return [quota.base[layout.position[m[0]]] for m in layout.members]


def extra_splits(quota: TopicQuota) -> list[tuple[int, ...]]:
    """Every number of extras per rack within the quota's rack rows that hands out all its extras."""
    ranges = (range(lo, hi + 1) for lo, hi in quota.rack_extras)
    return [e for e in product(*ranges) if sum(e) == quota.extras]


def spread(sizes: tuple[int, ...], totals: tuple[int, ...] | list[int]) -> int:
    """Broker spread of rack totals, brokers inside a rack within one of each other."""
    return max(-(-t // n) for t, n in zip(totals, sizes, strict=True)) - min(
        t // n for t, n in zip(totals, sizes, strict=True)
    )


@SETTINGS
@given(topics(), st.sampled_from(RackMode))
def test_a_quota_hands_out_the_topics_replicas_evenly_within_each_rack(
    case: tuple[RackLayout, list[int]], mode: RackMode
) -> None:
    layout, rfs = case
    quota = topic_quota(layout, rfs, mode)
    assert quota.total == sum(quota.base) + quota.extras == sum(rfs)
    # One base per rack, so its brokers end within one replica of each other.
    for members in layout.members:
        assert len({quota.base[layout.position[b]] for b in members}) == 1
    assert all(0 <= lo <= hi <= n for (lo, hi), n in zip(quota.rack_extras, layout.sizes, strict=True))
    # The racks' rows leave room to hand out every extra, at most one per broker.
    assert sum(lo for lo, _ in quota.rack_extras) <= quota.extras <= sum(hi for _, hi in quota.rack_extras)


@SETTINGS
@given(topics())
def test_under_strict_every_rack_total_the_quota_allows_stays_within_the_rack_limits(
    case: tuple[RackLayout, list[int]],
) -> None:
    layout, rfs = case
    quota = topic_quota(layout, rfs, RackMode.STRICT)
    limits = [
        (sum(layout.bounds(rf)[k][0] for rf in rfs), sum(layout.bounds(rf)[k][1] for rf in rfs))
        for k in range(len(layout.members))
    ]
    assert list(quota.limits) == limits
    for n, base, (least, most), (lo, hi) in zip(
        layout.sizes, rack_base(layout, quota), quota.rack_extras, limits, strict=True
    ):
        assert lo <= n * base + least <= n * base + most <= hi


@settings(max_examples=100, deadline=None, derandomize=True)
@given(topics(uniform=True))
def test_for_one_replication_factor_the_quota_reaches_the_smallest_spread_of_any_legal_placement(
    case: tuple[RackLayout, list[int]],
) -> None:
    layout, rfs = case
    sizes, rf = layout.sizes, rfs[0]
    whole = [f for f in product(*(range(lo, hi + 1) for lo, hi in layout.bounds(rf))) if sum(f) == rf]
    reachable = {
        tuple(map(sum, zip(*choice, strict=True)))
        for choice in combinations_with_replacement(whole, len(rfs))
    }
    best = min(spread(sizes, t) for t in reachable)
    quota = topic_quota(layout, rfs, RackMode.STRICT)
    base = rack_base(layout, quota)
    ours = [
        tuple(n * b + e for n, b, e in zip(sizes, base, split, strict=True)) for split in extra_splits(quota)
    ]
    # Some way of handing out the extras is a placement the rack rule allows, at the smallest spread.
    assert min(spread(sizes, t) for t in ours if t in reachable) == best


@SETTINGS
@given(topics())
def test_under_even_every_broker_gets_the_same_base_and_the_remainder_goes_to_extras(
    case: tuple[RackLayout, list[int]],
) -> None:
    layout, rfs = case
    quota = topic_quota(layout, rfs, RackMode.EVEN)
    brokers = len(layout.brokers)
    assert quota.base == (sum(rfs) // brokers,) * brokers
    assert quota.extras == sum(rfs) % brokers
    assert quota.limits == ()


def test_rf_three_over_racks_of_three_three_and_two_gives_the_small_rack_more_each() -> None:
    layout = RackLayout.of({b: f"r{b % 3}" for b in range(8)}, range(8))  # racks of 3, 3 and 2
    quota = topic_quota(layout, [3] * 6, RackMode.STRICT)
    assert rack_base(layout, quota) == [2, 2, 3]  # every rack holds one replica of each partition
    assert quota.extras == 0
    assert quota.rack_extras == ((0, 0), (0, 0), (0, 0))
    assert quota.extra_positions(layout) == []


def test_extra_positions_leave_out_the_racks_allowed_no_extra() -> None:
    layout = layout_of((2, 1, 2))
    quota = TopicQuota(base=(1,) * 5, extras=1, rack_extras=((0, 1), (0, 0), (1, 1)))
    assert quota.extra_positions(layout) == [0, 1, 3, 4]


def test_a_quota_depends_on_the_mix_of_factors_only_and_their_numbers_count() -> None:
    layout = layout_of((2, 3))
    first = topic_quota(layout, [1, 3, 2, 3], RackMode.STRICT)
    assert topic_quota(layout, [3, 3, 2, 1], RackMode.STRICT) is first
    assert topic_quota(layout, [3, 3, 2, 1], RackMode.EVEN) != first
    # The same factors in other numbers are another mix.
    assert topic_quota(layout, [3, 2, 1], RackMode.STRICT).total == 6
    assert topic_quota(layout, [3, 2, 1, 1], RackMode.STRICT).total == 7


def test_fixed_quota_puts_exactly_the_totals_in_each_rack_as_evenly_as_it_can() -> None:
    layout = layout_of((2, 3, 1))  # r0: 0 1, r1: 2 3 4, r2: 5
    quota = fixed_quota(layout, (6, 4, 3), ((0, 9),) * 3)
    assert quota.base == (3, 3, 1, 1, 1, 3)
    assert quota.rack_extras == ((0, 0), (1, 1), (0, 0))
    assert quota.extras == 1
    assert quota.total == 13
    assert quota.limits == ((0, 9),) * 3


@st.composite
def water(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], int]:
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    lows = [draw(st.integers(0, 12)) for _ in sizes]
    highs = [lo + draw(st.integers(0, 12)) for lo in lows]
    return sizes, lows, highs, draw(st.integers(sum(lows), sum(highs)))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(water())
def test_the_water_level_is_the_last_level_whose_fill_does_not_exceed_the_total(
    case: tuple[list[int], list[int], list[int], int],
) -> None:
    sizes, lows, highs, total = case

    def filled(m: int) -> int:
        return sum(max(lo, min(hi, n * m)) for n, lo, hi in zip(sizes, lows, highs, strict=True))

    level = water_level(sizes, lows, highs, total)
    assert filled(level) <= total
    if total < sum(highs):
        assert filled(level + 1) > total
    else:
        # Every rack at its upper bound: the first level that gets there.
        assert filled(level) == total
        assert level == 0 or filled(level - 1) < total
