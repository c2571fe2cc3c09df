"""Broker bands (ferry.plan.balance.bands): what water-filling over racks allows each broker, and which
bands the program tries at slack 0."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.clusters import unequal_racks

from ferry.model import Goal, RackMode
from ferry.plan.balance.bands import bands, broker_band
from ferry.plan.balance.rack_totals import exact_band, retarget
from ferry.plan.planner import in_scope, prepare_topic
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

Case = tuple[RackLayout, list[TopicDemand]]


def posed(sizes: tuple[int, ...], shapes: list[tuple[int, int]], seed: int, mode: RackMode) -> Case:
    snapshot = unequal_racks(sizes, [(p, min(rf, sum(sizes))) for p, rf in shapes], seed)
    layout = RackLayout.of(snapshot.racks, snapshot.broker_ids)
    goal = Goal(rack_mode=mode)
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


cases = st.builds(
    lambda case, again: (case[0], retarget(*case)) if again else case,
    st.builds(
        posed,
        st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
        st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3)), min_size=1, max_size=4),
        st.integers(0, 99),
        st.sampled_from(RackMode),
    ),
    st.booleans(),
)
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def reach(band: list[tuple[int, int]]) -> int:
    return max(hi for _, hi in band) - min(lo for lo, _ in band)


@SETTINGS
@given(cases)
def test_every_band_holds_the_clusters_replicas_and_one_racks_brokers_share_a_band_one_wide(
    case: Case,
) -> None:
    layout, demands = case
    total = sum(d.quota.total for d in demands)
    band = broker_band(layout, demands)
    for tried in bands(layout, demands, band):
        assert len(tried) == len(layout.brokers)
        assert sum(lo for lo, _ in tried) <= total <= sum(hi for _, hi in tried)
        for members in layout.members:
            assert len({tried[layout.position[b]] for b in members}) == 1
            lo, hi = tried[layout.position[members[0]]]
            assert 0 <= lo <= hi <= lo + 1


@SETTINGS
@given(cases)
def test_bands_tries_the_narrower_band_first_and_the_water_filled_one_on_a_tie(case: Case) -> None:
    layout, demands = case
    band = broker_band(layout, demands)
    tried = bands(layout, demands, band)
    assert band in tried and len(tried) in (1, 2)
    if len(tried) == 2:
        first, second = tried
        assert first != second and exact_band(layout, demands) in tried
        assert reach(first) < reach(second) or (reach(first) == reach(second) and first == band)


@pytest.mark.parametrize(
    ("sizes", "mode"), [((3, 3), RackMode.STRICT), ((2, 2, 2), RackMode.STRICT), ((3, 1), RackMode.EVEN)]
)
def test_equal_racks_or_even_mode_have_no_exact_band_and_try_the_water_filled_one_alone(
    sizes: tuple[int, ...], mode: RackMode
) -> None:
    layout, demands = posed(sizes, [(5, 2), (3, 1)], 0, mode)
    band = broker_band(layout, demands)
    assert exact_band(layout, demands) is None and bands(layout, demands, band) == [band]


def test_rf_3_over_racks_of_5_4_and_1_holds_the_lone_broker_to_every_partition() -> None:
    layout, demands = posed((5, 4, 1), [(10, 3), (7, 3)], 1, RackMode.STRICT)
    band = broker_band(layout, demands)
    # Every rack holds one replica of each of the 17 partitions: 3-4 a broker, 4-5, and 17.
    assert [{band[layout.position[b]] for b in m} for m in layout.members] == [{(3, 4)}, {(4, 5)}, {(17, 17)}]
