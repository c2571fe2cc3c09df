"""Rack totals decided for the whole cluster (ferry.plan.balance.rack_totals): the ranges racks may hold,
water-filled loads, and retarget changing quotas only where that lowers the smallest spread."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.clusters import unequal_racks

from ferry.model import Goal, RackMode
from ferry.plan.balance.rack_totals import exact_band, rack_loads, rack_ranges, retarget, shares
from ferry.plan.planner import in_scope, prepare_topic
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

Case = tuple[RackLayout, list[TopicDemand]]


def posed(
    sizes: tuple[int, ...], shapes: list[tuple[int, int]], seed: int, mode: RackMode = RackMode.STRICT
) -> Case:
    snapshot = unequal_racks(sizes, [(p, min(rf, sum(sizes))) for p, rf in shapes], seed)
    layout = RackLayout.of(snapshot.racks, snapshot.broker_ids)
    goal = Goal(rack_mode=mode)
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


cases = st.builds(
    posed,
    st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple),
    st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3)), min_size=1, max_size=3),
    st.integers(0, 999),
)
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True)


def in_racks(layout: RackLayout, demand: TopicDemand) -> list[int]:
    """Per rack, the replicas a quota with fixed rack extras puts there."""
    quota = demand.quota
    return [
        sum(quota.base[layout.position[b]] for b in m) + lo
        for m, (lo, _) in zip(layout.members, quota.rack_extras, strict=True)
    ]


def reach(band: list[tuple[int, int]] | None) -> int:
    assert band is not None
    return max(hi for _, hi in band) - min(lo for lo, _ in band)


@SETTINGS
@given(cases)
def test_rack_ranges_lie_within_the_rack_rule_hold_the_total_and_rack_loads_stay_in_them(case: Case) -> None:
    layout, demands = case
    ranges = rack_ranges(layout, demands)
    assert rack_ranges(layout, []) == [(0, 0)] * len(layout.members)
    assert sum(lo for lo, _ in ranges) <= sum(d.quota.total for d in demands) <= sum(hi for _, hi in ranges)
    for k, ((lo, hi), n, (least, most, total)) in enumerate(
        zip(ranges, layout.sizes, rack_loads(layout, demands), strict=True)
    ):
        assert (
            sum(d.quota.limits[k][0] for d in demands)
            <= lo
            <= hi
            <= sum(d.quota.limits[k][1] for d in demands)
        )
        assert lo <= total <= hi and n * least <= total <= n * most <= n * (least + 1)


def _check_retargeted(layout: RackLayout, demands: list[TopicDemand], out: list[TopicDemand]) -> None:
    assert reach(exact_band(layout, out)) < reach(exact_band(layout, demands))
    alike: dict[tuple[object, ...], list[list[int]]] = {}
    for d, new in zip(demands, out, strict=True):
        assert (new.held, new.free, new.pinned, new.partitions) == (d.held, d.free, d.pinned, d.partitions)
        assert new.quota.total == d.quota.total and new.quota.limits == d.quota.limits
        assert all(lo == hi for lo, hi in new.quota.rack_extras)  # every rack's total is fixed
        totals = in_racks(layout, new)
        assert all(lo <= t <= hi for t, (lo, hi) in zip(totals, new.quota.limits, strict=True))
        alike.setdefault((d.quota.total, d.quota.limits, d.single_replica), []).append(totals)
    for group in alike.values():  # topics alike share their rack totals within one replica
        assert all(max(column) - min(column) <= 1 for column in zip(*group, strict=True))
    low, extra = divmod(sum(d.partitions for d in demands), len(layout.brokers))
    single = [in_racks(layout, new) for new in out if new.single_replica]
    for k, n in enumerate(layout.sizes):  # single replicas lead: no rack takes more than it can lead
        assert sum(t[k] for t in single) <= n * low + min(n, extra)


@pytest.mark.parametrize(
    ("sizes", "shapes", "seed"),
    [
        ((4, 1, 3), [(8, 2), (5, 2), (6, 3)], 0),
        ((1, 3), [(7, 1), (8, 2)], 94),
        ((1, 4, 1), [(6, 3), (8, 3), (5, 1)], 145),
        ((1, 5, 1), [(8, 1), (7, 1), (3, 2)], 4351),  # single replicas kept within what racks can lead
    ],
)
def test_retarget_fixes_rack_totals_that_lower_the_smallest_spread(
    sizes: tuple[int, ...], shapes: list[tuple[int, int]], seed: int
) -> None:
    layout, demands = posed(sizes, shapes, seed)
    out = retarget(layout, demands)
    assert out != demands
    _check_retargeted(layout, demands, out)
    # Equal racks, or racks that do not bound loads, keep the very demands they had.
    for same in (posed((3, 3), shapes, seed), posed(sizes, shapes, seed, RackMode.EVEN)):
        assert all(a is b for a, b in zip(retarget(*same), same[1], strict=True))


@SETTINGS
@given(cases)
def test_retarget_changes_quotas_only_where_the_smallest_spread_drops(case: Case) -> None:
    layout, demands = case
    out = retarget(layout, demands)
    if out != demands:
        _check_retargeted(layout, demands, out)
    else:
        assert all(a is b for a, b in zip(out, demands, strict=True))


def test_rf_2_topics_leave_the_lone_broker_to_the_rf_3_topics_that_must_use_it() -> None:
    layout, demands = posed((5, 4, 1), [(10, 3), (10, 2), (7, 3)], seed=0)
    lone = layout.position[layout.members[2][0]]
    assert [d.quota.base[lone] for d in demands] == [10, 2, 7]
    assert [d.quota.base[lone] for d in retarget(layout, demands)] == [10, 0, 7]


def test_shares_hand_remainders_round_the_items_in_turn_and_refuse_totals_that_do_not_split() -> None:
    assert shares((1, 1, 1, 1), 2, 2) == [(1, 0, 1, 0), (0, 1, 0, 1)]
    assert shares((5, 1), 3, 2) == [(2, 0), (2, 0), (1, 1)]
    with pytest.raises(AssertionError, match="do not add up"):
        shares((3, 1), 2, 3)
